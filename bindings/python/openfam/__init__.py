"""openfam: OpenFAM (fabric-attached memory) for Python, zero-copy with numpy.

A thin layer over libopenfam's C interface (``include/openfam.h``) through
ctypes. Start with :class:`Fam`::

    import numpy as np, openfam
    with openfam.Fam() as fam:
        region = fam.create_region("demo", 1 << 20)
        item = region.allocate(8 * 1024, "vec")
        item.put(np.arange(1024, dtype=np.float64))
        out = item.get_into(np.empty(1024))
        region.destroy()

``python -m openfam`` prints which library is used, the versions, and
where the store and server are.

The library is looked up in this order: the ``OPENFAM_LIBRARY`` environment
variable (only that path when set), the copy shipped inside the package, the
``build/lib`` of a source checkout, then the system library path.
"""

from ._core import (
    NAME_MAX,
    Context,
    DataItem,
    Fam,
    GlobalDescriptor,
    ItemInfo,
    Region,
    RegionInfo,
    Stat,
    library_path,
)
from ._errors import (
    AlreadyExists,
    FamError,
    ForkedChildError,
    InternalError,
    InvalidArgument,
    InvalidOperation,
    LibraryNotFoundError,
    NameTooLong,
    NoSpace,
    ResourceBusy,
    NotFound,
    OutOfRange,
    PermissionDenied,
    Timeout,
    Unavailable,
    Unimplemented,
)

from ._about import API_VERSION as OPENFAM_API_VERSION
from ._about import VERSION as __version__

__all__ = [
    "NAME_MAX",
    "OPENFAM_API_VERSION",
    "AlreadyExists",
    "Context",
    "DataItem",
    "Fam",
    "FamError",
    "ForkedChildError",
    "GlobalDescriptor",
    "InternalError",
    "InvalidArgument",
    "InvalidOperation",
    "ItemInfo",
    "LibraryNotFoundError",
    "NameTooLong",
    "NoSpace",
    "ResourceBusy",
    "NotFound",
    "OutOfRange",
    "PermissionDenied",
    "Region",
    "RegionInfo",
    "Stat",
    "Timeout",
    "Unavailable",
    "Unimplemented",
    "library_path",
]
