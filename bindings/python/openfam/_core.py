"""The public objects: Fam, Region, DataItem, Context and their value types."""

from __future__ import annotations

import ctypes
import html
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import (
    Any,
    Dict,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import numpy as np

from . import _about, _capi
from ._args import U64_MAX, integer as _integer, mode as _mode, u64 as _u64
from ._buffer import index_array, readable, writable
from ._capi import L, check, last_error
from ._errors import (
    FamError,
    InvalidArgument,
    InvalidOperation,
    Unimplemented,
)

_EINVAL = 4
_EUNIMPL = 16
_EINVALIDOP = 18

#: The longest region or data item name, in bytes.
NAME_MAX = _capi.NAME_MAX

DTypeLike = Any  # whatever numpy.dtype() accepts, or the string "int128"
Buffer = Any  # any object with the buffer protocol
Index = Union[range, slice, Sequence[int], np.ndarray]

_MEMORY_TYPES = {0: "default", 1: "volatile", 2: "persistent"}
_INTERLEAVE = {0: None, 1: True, 2: False}
_PERMISSION_LEVELS = {0: "default", 1: "region", 2: "dataitem"}
_REDUNDANCY = {0: "default", 1: "none", 2: "raid1", 3: "raid5"}

_ATOMIC_TYPES: Dict[np.dtype, str] = {
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}
_NP_TYPES = {v: k.type for k, v in _ATOMIC_TYPES.items()}
_INT_LIMITS = {
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint32": (0, (1 << 32) - 1),
    "uint64": (0, (1 << 64) - 1),
    "int128": (-(1 << 127), (1 << 127) - 1),
}
_SIZES = {"int32": 4, "uint32": 4, "float": 4, "int64": 8, "uint64": 8, "double": 8, "int128": 16}
_NOBUF = object()
_MASK64 = (1 << 64) - 1


def _encode(name: str, what: str = "name") -> bytes:
    if not isinstance(name, str):
        raise TypeError("%s must be a str, not %s" % (what, type(name).__name__))
    return name.encode("utf-8")


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "bytes" else ("%.4g %s" % (n, unit))
        n /= 1024  # type: ignore[assignment]
    return str(n)


class GlobalDescriptor(NamedTuple):
    """A process-independent name for a region or item (pass it to other PEs).

    A region's descriptor has ``offset == 2**64 - 1``.
    """

    region_id: int
    offset: int


class RegionInfo(NamedTuple):
    """One region of :meth:`Fam.regions`: a snapshot, not a handle.

    Open it with ``fam.lookup_region(info.name)``.
    """

    name: str
    size: int
    mode: int
    uid: int
    gid: int


class ItemInfo(NamedTuple):
    """One data item of :meth:`Region.items`: a snapshot, not a handle.

    ``name`` is ``""`` for an unnamed item; ``offset`` is the item's offset
    in the region, as in its :class:`GlobalDescriptor`. ``mode``, ``uid``
    and ``gid`` are the item's own.
    """

    name: str
    offset: int
    size: int
    mode: int
    uid: int
    gid: int


def _take_listing(p: Optional[int], fields: int) -> List[List[str]]:
    """Splits a malloc'd listing of fam_list_regions/fam_list_items into
    rows of fields, and frees it.

    Each line ends in a newline and holds tab-separated fields; names cannot
    hold tabs, newlines or other control characters (the library refuses
    them), so splitting is unambiguous. Names are decoded as UTF-8 with
    replacement, as :class:`Stat` does.
    """
    if not p:
        raise last_error()
    try:
        raw = ctypes.string_at(p)
    finally:
        _capi.free(p)
    rows = []
    for line in raw.split(b"\n")[:-1]:
        parts = line.split(b"\t")
        if len(parts) != fields:
            raise FamError(1, "the library listed a malformed line %r" % line)
        rows.append([parts[0].decode("utf-8", "replace")] + [x.decode("ascii") for x in parts[1:]])
    return rows


@dataclass(frozen=True)
class Stat:
    """What ``fam_stat``/``fam_stat_region`` report about an item or region."""

    size: int
    mode: int
    name: str
    uid: int
    gid: int
    memory_type: str
    interleave: Optional[bool]
    permission_level: str
    redundancy: str
    num_memservers: int
    interleave_size: int
    memory_servers: Tuple[int, ...]

    @property
    def persistent(self) -> bool:
        """True when the memory lives on the persistent (disk-backed) tier."""
        return self.memory_type == "persistent"

    @classmethod
    def _from_c(cls, st: _capi.StatT) -> "Stat":
        ra = st.region_attributes
        n = min(int(st.num_memservers), 256)
        return cls(
            size=int(st.size),
            mode=int(st.perm) & 0o7777,
            name=(st.name or b"").decode("utf-8", "replace"),
            uid=int(st.uid),
            gid=int(st.gid),
            memory_type=_MEMORY_TYPES.get(ra.memory_type, str(ra.memory_type)),
            interleave=_INTERLEAVE.get(ra.interleave_enable),
            permission_level=_PERMISSION_LEVELS.get(ra.permission_level, str(ra.permission_level)),
            redundancy=_REDUNDANCY.get(ra.redundancy_level, str(ra.redundancy_level)),
            num_memservers=int(st.num_memservers),
            interleave_size=int(st.interleave_size),
            memory_servers=tuple(int(x) for x in st.memory_servers[:n]),
        )

    def _html_rows(self) -> str:
        rows = [
            ("size", "%d (%s)" % (self.size, _human(self.size))),
            ("mode", oct(self.mode)),
            ("owner", "uid %d, gid %d" % (self.uid, self.gid)),
            ("memory", self.memory_type),
            ("interleave", {None: "default", True: "yes", False: "no"}[self.interleave]),
            ("permission level", self.permission_level),
            ("memory servers", ", ".join(map(str, self.memory_servers)) or "-"),
        ]
        return "".join(
            "<tr><th style='text-align:left'>%s</th><td style='text-align:left'>%s</td></tr>"
            % (html.escape(k), html.escape(v))
            for k, v in rows
        )


def _atomic_type(dtype: DTypeLike) -> str:
    if isinstance(dtype, str) and dtype == "int128":
        return "int128"
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise InvalidArgument(_EINVAL, "not a dtype: %r" % (dtype,)) from None
    t = _ATOMIC_TYPES.get(dt)
    if t is None:
        raise InvalidArgument(
            _EINVAL,
            "atomics support int32, int64, uint32, uint64, float32, float64 and "
            "'int128' (native byte order), not %s" % dt,
        )
    return t


def _c_value(t: str, v: Any) -> Any:
    if t in ("float", "double"):
        return float(v)
    if isinstance(v, (float, np.floating)) or not hasattr(v, "__index__"):
        raise TypeError("a %s atomic needs an integer value, not %r" % (t, v))
    iv = int(v)
    lo, hi = _INT_LIMITS[t]
    if not lo <= iv <= hi:
        raise OverflowError("%d does not fit in %s" % (iv, t))
    return iv


def _need_int128_abi() -> None:
    if not _capi.INT128_SUPPORTED:
        raise Unimplemented(
            _EUNIMPL,
            "int128 atomics that pass a value need the x86-64 calling convention; "
            "this machine is not x86-64",
        )


def _split128(v: int) -> Tuple[int, int]:
    u = v & ((1 << 128) - 1)
    return u & _MASK64, u >> 64


def _join128(lo: int, hi: int) -> int:
    u = (hi << 64) | lo
    return u - (1 << 128) if u >> 127 else u


def _as_index(index: Index, what: str = "index") -> Union[Tuple[int, int, int], np.ndarray]:
    """A range/slice becomes (n, first, stride); anything else an index array."""
    if isinstance(index, slice):
        if index.stop is None:
            raise InvalidArgument(_EINVAL, "a slice %s needs a stop" % what)
        index = range(*index.indices(index.stop))
    if isinstance(index, range):
        if index.start < 0 or index.step < 1:
            raise InvalidArgument(
                _EINVAL, "a strided %s needs start >= 0 and step >= 1" % what
            )
        return len(index), index.start, index.step
    return index_array(index)


class _Queue:
    """Buffers of non-blocking operations, kept alive until the next quiet."""

    __slots__ = ("keep",)

    def __init__(self) -> None:
        self.keep: List[Any] = []


# The active Fam (see Fam.current); initialize and finalize change it under
# the lock, so two threads initializing at once get one instance.
_live: Optional["Fam"] = None
_live_lock = threading.RLock()


class Fam:
    """The process-wide OpenFAM instance, as a context manager.

    ``with openfam.Fam() as fam:`` initializes the library on entry and
    finalizes it on exit, releasing every region and item handle made through
    it. One Fam may be active per process at a time; finalizing and then
    initializing again is allowed. Objects are safe to use from several
    threads.

    :meth:`Fam.current` returns the active instance (None when there is
    none), and :meth:`initialize` of a Fam with the same group and options
    as the active one attaches to it instead of failing, so a notebook cell
    that runs ``fam = openfam.Fam().initialize()`` may be run again. A
    ``with`` block owns its instance (it finalizes it at its end), so
    entering one while another Fam is active raises :class:`FamError`, as
    does initializing with another group or other options.

    With no configuration the library serves everything inside the process
    from files under the per-user data directories (``OPENFAM_DATA_DIR``,
    ``OPENFAM_SHM_DIR``). Under a launcher (famrun, SLURM, PMI, Open MPI)
    every process is one PE of the job.

    Do not use the library in a child created by ``os.fork()`` (the default
    start method of :mod:`multiprocessing` on Linux before Python 3.14):
    such a child gets :class:`ForkedChildError`. Use the ``'spawn'`` method.

    Args:
        group: the job's group name, passed to ``fam_initialize``.
        options: ``fam_options_t`` fields by name (``"runtime"``,
            ``"fam_default_memory_type"``, ``"cis_server"``, ...), as strings.
    """

    def __init__(self, group: str = "openfam", *, options: Optional[Mapping[str, str]] = None) -> None:
        _encode(group, "group")  # a TypeError now, not at initialize
        self.group = group
        self._options = dict(options or {})
        unknown = set(self._options) - set(_capi.OPTION_FIELDS)
        if unknown:
            raise InvalidArgument(
                _EINVAL,
                "unknown option(s) %s; known: %s"
                % (", ".join(sorted(unknown)), ", ".join(_capi.OPTION_FIELDS)),
            )
        self._active = False
        self._pe_id = -1
        self._pe_count = 0
        self._queue = _Queue()
        self._children: "weakref.WeakSet[Any]" = weakref.WeakSet()
        # Server and store as the environment named them at initialize
        # (the library reads them then; a later change does not apply).
        self._settings: List[Tuple[str, str, str]] = []

    # ---- life cycle ------------------------------------------------------

    @classmethod
    def current(cls) -> Optional["Fam"]:
        """The active (initialized, not yet finalized) instance, or None.

        Finds the live instance again after its variable was lost, as when a
        notebook cell that initialized is run again or edited.
        """
        live = _live
        return live if live is not None and live._active else None

    def initialize(self) -> "Fam":
        """Starts the library (what ``__enter__`` does); returns the instance.

        If a Fam with the same group and options is already active in this
        process, this one attaches to it: both then name the same instance
        (its regions, PE id, finalize) and the active one is returned, so
        running ``fam = openfam.Fam().initialize()`` twice is harmless.

        Raises:
            LibraryNotFoundError: libopenfam.so.0 cannot be loaded.
            InvalidArgument: another Fam with a different group or options
                is active (finalize it first; :meth:`current` returns it), or
                the library refused.
        """
        global _live
        # First, so that a forked child gets ForkedChildError (and never
        # waits on a lock some other thread of its parent held at the fork).
        _capi.load()
        with _live_lock:
            live = self.current()
            if live is not None:
                return self._attach(live)
            self._start()
            _live = self
        return self

    def _attach(self, live: "Fam") -> "Fam":
        if live.__dict__ is self.__dict__:
            return live
        if live.group != self.group or live._options != self._options:
            raise InvalidArgument(
                _EINVAL,
                "fam_initialize: already initialized in this process as %r (group %r%s); "
                "openfam.Fam.current() returns it; finalize it first to start another"
                % (live, live.group, ", options %r" % live._options if live._options else ""),
            )
        # Sharing the instance dict makes the two objects one instance in
        # all but identity: a caller that ignores the return value and keeps
        # using its own object sees the live state, and finalize through
        # either ends both.
        self.__dict__ = live.__dict__
        return live

    def _start(self) -> None:
        keep = [_encode(self.group, "group")]
        opts = None
        if self._options:
            opts = _capi.OptionsT()
            for k, v in self._options.items():
                b = _encode(str(v), k)
                keep.append(b)
                setattr(opts, k, b)
        check(L.initialize(keep[0], ctypes.byref(opts) if opts is not None else None))
        self._active = True
        self._pe_id = int(self._int_option("PE_ID"))
        self._pe_count = int(self._int_option("PE_COUNT"))
        self._settings = _about.store_settings()

    def finalize(self) -> None:
        """Waits for outstanding operations, releases every handle, stops.

        Regions, items and contexts made through this Fam become unusable
        (their calls raise :class:`InvalidArgument`). Memory views from
        :meth:`DataItem.map` are released; numpy arrays still viewing mapped
        memory trigger a ResourceWarning and read zeros afterwards (the
        library keeps the address range reserved, so they never crash).
        """
        global _live
        if not self._active:
            return
        if _capi.forked:
            _capi.load()  # raises ForkedChildError; see initialize
        with _live_lock:
            if not self._active:
                return
            for child in list(self._children):
                child._release_on_finalize()
            self._active = False
            self._queue.keep.clear()
            if _live is not None and _live.__dict__ is self.__dict__:
                _live = None
            check(L.finalize(_encode(self.group, "group")))

    def __enter__(self) -> "Fam":
        live = self.current()
        if live is not None and live.__dict__ is not self.__dict__:
            # The block would finalize at its end an instance it did not
            # start; refuse as fam_initialize does.
            raise InvalidArgument(
                _EINVAL,
                "fam_initialize: already initialized in this process as %r; a `with` "
                "block cannot share it (use openfam.Fam.current(), or finalize it first)" % (live,),
            )
        return self.initialize()

    def __exit__(self, *exc: object) -> None:
        self.finalize()

    @property
    def active(self) -> bool:
        """True between initialize and finalize."""
        return self._active

    # ---- runtime ------------------------------------------------------------

    @property
    def pe_id(self) -> int:
        """This process's rank in the job (0 when run alone)."""
        return self._pe_id

    @property
    def pe_count(self) -> int:
        """The number of PEs in the job (1 when run alone)."""
        return self._pe_count

    def barrier(self) -> None:
        """Waits until every PE of the job has called barrier."""
        check(L.barrier_all())

    def quiet(self) -> None:
        """Waits for this instance's non-blocking operations to complete.

        Raises the first error among them. Buffers handed to non-blocking
        calls may be reused once quiet returns.
        """
        try:
            check(L.quiet())
        finally:
            self._queue.keep.clear()

    def fence(self) -> None:
        """Orders earlier non-blocking operations before later ones."""
        check(L.fence())

    def progress(self) -> int:
        """The number of this instance's operations not yet complete."""
        return int(L.progress())

    def abort(self, status: int) -> None:
        """Ends the whole job with ``status`` (every PE exits). Does not return."""
        check(L.abort(_integer(status, "status")))

    def option(self, name: str) -> Union[int, str]:
        """The value of one library option (``fam_get_option``).

        ``PE_ID``, ``PE_COUNT`` and ``LOC_BUF_SIZE`` are ints, others strings.
        """
        if name in ("PE_ID", "PE_COUNT", "LOC_BUF_SIZE"):
            return self._int_option(name)
        p = L.get_option(_encode(name))
        if not p:
            raise last_error()
        try:
            return (ctypes.cast(p, ctypes.c_char_p).value or b"").decode("utf-8", "replace")
        finally:
            _capi.free(p)

    def options(self) -> Dict[str, Union[int, str]]:
        """Every option the library lists, with its value."""
        p = L.list_options()
        if not p:
            raise last_error()
        try:
            arr = ctypes.cast(p, ctypes.POINTER(ctypes.c_char_p))
            names = []
            i = 0
            while arr[i] is not None:
                names.append(arr[i].decode())
                i += 1
        finally:
            _capi.free(p)
        return {n: self.option(n) for n in names}

    def _int_option(self, name: str) -> int:
        p = L.get_option(_encode(name))
        if not p:
            raise last_error()
        try:
            ct = ctypes.c_uint64 if name == "LOC_BUF_SIZE" else ctypes.c_int
            return int(ctypes.cast(p, ctypes.POINTER(ct))[0])
        finally:
            _capi.free(p)

    # ---- regions and items ------------------------------------------------

    def create_region(
        self,
        name: str,
        size: int,
        mode: int = 0o600,
        *,
        persistent: bool = False,
        interleave: Optional[bool] = None,
        item_permissions: bool = False,
    ) -> "Region":
        """Creates a region of ``size`` bytes owned by the caller.

        Args:
            name: at most :data:`NAME_MAX` bytes of UTF-8, unique in the store.
            size: bytes; items are allocated inside it.
            mode: permission bits, 0 to 0o777 (0o600: no one but the owner);
                any other bit raises InvalidArgument. The bits bind every user
                but the owner: as in OpenFAM, the owner may always read,
                write, allocate in, resize and destroy its own region.
            persistent: keep the region on the persistent (disk) tier, where
                it survives the process and a restart; otherwise volatile.
            interleave: stripe across memory servers (None: library default).
            item_permissions: each item's own mode governs access to it (and
                :meth:`DataItem.chmod` changes it); otherwise, as in OpenFAM
                by default, the region's mode governs every item in it.

        Raises:
            AlreadyExists, NameTooLong, InvalidArgument, NoSpace.
        """
        attr = _capi.RegionAttr(
            0,
            2 if persistent else 1,
            {None: 0, True: 1, False: 2}[None if interleave is None else bool(interleave)],
            2 if item_permissions else 1,
        )
        h = L.create_region(_encode(name), _u64(size, "size"), _mode(mode), ctypes.byref(attr))
        if not h:
            raise last_error()
        return Region(self, h, name)

    def regions(self) -> List[RegionInfo]:
        """Describes every region this process may read or write, by
        ascending region id (``fam_list_regions``).

        A snapshot: regions made or destroyed meanwhile may or may not
        appear. Raises Unavailable/Timeout when famd cannot be reached.
        """
        return [
            RegionInfo(name, int(size), int(mode, 8), int(uid), int(gid))
            for name, size, mode, uid, gid in _take_listing(L.list_regions(), 5)
        ]

    def lookup_region(self, name: str) -> "Region":
        """Opens an existing region by name. Raises NotFound, PermissionDenied."""
        h = L.lookup_region(_encode(name))
        if not h:
            raise last_error()
        return Region(self, h, name)

    def lookup(self, item_name: str, region_name: str) -> "DataItem":
        """Opens an existing named data item. Raises NotFound, PermissionDenied."""
        h = L.lookup(_encode(item_name, "item_name"), _encode(region_name, "region_name"))
        if not h:
            raise last_error()
        return DataItem(self, h, item_name)

    def context(self) -> "Context":
        """Opens a context: a separate completion queue, closed on ``with`` exit.

        Operations issued through ``ctx.bind(item)`` complete on
        ``ctx.quiet()``, independently of :meth:`quiet` and other contexts.
        """
        return Context(self)

    def __repr__(self) -> str:
        if not self._active:
            return "<openfam.Fam group=%r (not initialized)>" % self.group
        return "<openfam.Fam group=%r pe %d of %d, %s>" % (
            self.group, self._pe_id, self._pe_count, self._server())

    def _server(self) -> str:
        for what, value, _src in self._settings:
            if what == "server":
                return "embedded" if value == "embedded" else "server " + value
        return "embedded"

    def _repr_html_(self) -> str:
        head = "<b>openfam.Fam</b> <code>%s</code>" % html.escape(self.group)
        if not self._active:
            return head + " (not initialized)"
        kids = list(self._children)
        rows = [
            ("PE", "%d of %d" % (self._pe_id, self._pe_count)),
            ("open handles", "%d region(s), %d item(s), %d context(s)" % (
                sum(isinstance(k, Region) and k._h is not None for k in kids),
                sum(isinstance(k, DataItem) and k._h is not None for k in kids),
                sum(isinstance(k, Context) and k._h is not None for k in kids))),
        ]
        rows += [(what, "%s [%s]" % (value, src)) for what, value, src in self._settings]
        rows.append(("library", _capi.loaded_path() or "?"))
        return "%s<table>%s</table>" % (head, "".join(
            "<tr><th style='text-align:left'>%s</th><td style='text-align:left'>%s</td></tr>"
            % (html.escape(k), html.escape(v)) for k, v in rows))


class Region:
    """A named region: a pool of FAM from which data items are allocated.

    Made by :meth:`Fam.create_region` or :meth:`Fam.lookup_region`. The
    handle lives until :meth:`destroy` or the Fam's finalize.
    """

    def __init__(self, fam: Fam, handle: int, name: str) -> None:
        self._fam = fam
        self._h: Optional[int] = handle
        self._name = name
        fam._children.add(self)

    @property
    def name(self) -> str:
        """The region's name."""
        return self._name

    @property
    def size(self) -> int:
        """The region's current size in bytes (asks the library)."""
        return self.stat().size

    def stat(self) -> Stat:
        """Size, permissions, owner and attributes of the region."""
        st = _capi.StatT()
        check(L.stat_region(self._h, ctypes.byref(st)))
        return Stat._from_c(st)

    def allocate(self, size: int, name: Optional[str] = None, mode: int = 0o600) -> "DataItem":
        """Allocates a data item of ``size`` bytes in this region.

        An item without a name is reachable only through its
        :attr:`DataItem.global_descriptor`. Raises AlreadyExists, NoSpace,
        PermissionDenied, NameTooLong.
        """
        h = L.allocate(None if name is None else _encode(name), _u64(size, "size"), _mode(mode), self._h)
        if not h:
            raise last_error()
        return DataItem(self._fam, h, name if name is not None else "")

    def items(self) -> List[ItemInfo]:
        """Describes every data item of the region, by ascending offset
        (``fam_list_items``); unnamed items have the name ``""``.

        Needs read or write permission on the region. Raises
        PermissionDenied, NotFound (region destroyed), InvalidArgument
        (handle released).
        """
        return [
            ItemInfo(name, int(off), int(size), int(mode, 8), int(uid), int(gid))
            for name, off, size, mode, uid, gid in _take_listing(L.list_items(self._h), 6)
        ]

    def lookup(self, item_name: str) -> "DataItem":
        """Opens a named item of this region (same as ``fam.lookup``)."""
        return self._fam.lookup(item_name, self._name)

    def resize(self, size: int) -> None:
        """Grows (or shrinks down to its last item) the region.

        The owner may always; anyone else needs write permission on the
        region, not ownership. Raises PermissionDenied, InvalidArgument.
        """
        check(L.resize_region(self._h, _u64(size, "size")))

    def chmod(self, mode: int) -> None:
        """Changes the region's permission bits. Owner only. The bits bind
        other users at once (their open handles included), never the owner."""
        check(L.change_region_permissions(self._h, _mode(mode)))

    def destroy(self) -> None:
        """Destroys the region and every item in it, and releases the handle.

        The owner may always; anyone else needs write permission on the
        region, not ownership. Raises PermissionDenied.
        """
        check(L.destroy_region(self._h))
        self._h = None

    @property
    def global_descriptor(self) -> GlobalDescriptor:
        """The region's process-independent name."""
        g = _capi.GlobalDesc()
        check(L.region_global(self._h, ctypes.byref(g)))
        return GlobalDescriptor(int(g.region_id), int(g.offset))

    def _release_on_finalize(self) -> None:
        self._h = None

    def __repr__(self) -> str:
        if self._h is None:
            return "<openfam.Region %r (released)>" % self._name
        try:
            st = self.stat()
        except FamError as e:
            return "<openfam.Region %r (%s)>" % (self._name, e.name)
        return "<openfam.Region %r %s %s, mode %s>" % (
            self._name, _human(st.size), st.memory_type, oct(st.mode))

    def _repr_html_(self) -> str:
        head = "<b>openfam.Region</b> <code>%s</code>" % html.escape(self._name)
        try:
            rows = self.stat()._html_rows()
        except FamError as e:
            return "%s (%s)" % (head, html.escape(str(e)))
        return "%s<table>%s</table>" % (head, rows)


class DataItem:
    """A data item: a byte range in FAM that PEs read, write and update.

    Made by :meth:`Region.allocate`, :meth:`Fam.lookup` or
    :meth:`from_global`. The handle lives until :meth:`close`,
    :meth:`deallocate`, the Fam's finalize, or garbage collection (which
    closes it; the item itself stays in FAM).

    Local buffers are any buffer-protocol object; numpy arrays and bytearrays
    are used in place (zero-copy). A non-blocking call may use its buffer
    until the next ``quiet()``; the binding keeps the buffer alive until then.
    Calls are safe from several threads.
    """

    def __init__(self, fam: Fam, handle: int, name: Optional[str], ctx: Optional["Context"] = None) -> None:
        self._fam = fam
        self._h: Optional[int] = handle
        self._name = name
        self._size: Optional[int] = None
        self._ctx = ctx
        self._queue = ctx._queue if ctx is not None else fam._queue
        self._bufcache: Tuple[Any, int, int, Any] = (_NOBUF, 0, 0, None)
        self._view: Optional[memoryview] = None
        self._carr: Optional[Any] = None
        self._map_addr = 0
        if ctx is None:
            fam._children.add(self)

    @classmethod
    def from_global(cls, fam: Fam, g: Union[GlobalDescriptor, Tuple[int, int]]) -> "DataItem":
        """An item named by a global descriptor (possibly from another PE).

        Resolution and the permission check happen on first use.
        """
        region_id, offset = g
        h = L.desc_from_global(_capi.GlobalDesc(_u64(region_id, "region_id"), _u64(offset, "offset")))
        if not h:
            raise last_error()
        return cls(fam, h, None)

    # ---- properties -------------------------------------------------------

    @property
    def name(self) -> str:
        """The item's name ("" for an unnamed item)."""
        if self._name is None:
            self._name = self.stat().name
        return self._name

    @property
    def size(self) -> int:
        """The item's size in bytes."""
        if self._size is None:
            self._size = self.stat().size
        return self._size

    @property
    def global_descriptor(self) -> GlobalDescriptor:
        """The item's process-independent name, to pass to other PEs."""
        g = _capi.GlobalDesc()
        check(L.desc_global(self._h, ctypes.byref(g)))
        return GlobalDescriptor(int(g.region_id), int(g.offset))

    @property
    def closed(self) -> bool:
        """True once the handle was closed, deallocated or finalized."""
        return self._h is None

    def stat(self) -> Stat:
        """Size, permissions, owner and region attributes of the item."""
        st = _capi.StatT()
        check(L.stat(self._h, ctypes.byref(st)))
        return Stat._from_c(st)

    def chmod(self, mode: int) -> None:
        """Changes the item's permission bits. Owner only, and only in a region
        created with ``item_permissions=True`` (else PermissionDenied: the
        region's mode governs its items). The bits bind other users at once
        (their open handles included), never the owner, who may always read
        and write its own item, as in OpenFAM."""
        check(L.change_permissions(self._h, _mode(mode)))

    # ---- data path ----------------------------------------------------------

    def _call(self, name: str, *args: Any) -> int:
        c = self._ctx
        if c is None:
            return getattr(L, name)(*args)
        return getattr(L, "ctx_" + name)(c._h, *args)

    def get_into(self, buffer: Buffer, offset: int = 0, *, blocking: bool = True) -> Buffer:
        """Reads ``len(buffer)`` bytes at ``offset`` into ``buffer``; returns it.

        ``buffer`` must be writable and C-contiguous; its whole extent (in
        bytes) is filled. With ``blocking=False`` the data is there after the
        next ``quiet()``. Raises OutOfRange past the end of the item.

        The last numpy array used with this item is remembered so repeated
        calls skip the buffer gate; this keeps one reference to it.
        """
        if offset.__class__ is not int or not 0 <= offset <= U64_MAX:
            offset = _u64(offset, "offset")
        c = self._bufcache
        if c[0] is buffer:
            addr = c[1]
            n = c[2]
            keep = c[3]
        else:
            addr, n, keep = writable(buffer)
            if type(buffer) is np.ndarray:
                self._bufcache = (buffer, addr, n, keep)
        if blocking:
            if self._ctx is None:
                rc = L.get_blocking(addr, self._h, offset, n)
            else:
                rc = L.ctx_get_blocking(self._ctx._h, addr, self._h, offset, n)
            if rc:
                check(rc)
            return buffer
        self._queue.keep.append(keep)
        check(self._call("get_nonblocking", addr, self._h, offset, n))
        return buffer

    def get(self, nbytes: Optional[int] = None, offset: int = 0) -> bytes:
        """Reads ``nbytes`` (default: to the end of the item) at ``offset``."""
        offset = _u64(offset, "offset")
        if nbytes is None:
            nbytes = max(self.size - offset, 0)
        out = bytearray(_u64(nbytes, "nbytes"))
        self.get_into(out, offset)
        return bytes(out)

    def persist(self, offset: int = 0, nbytes: Optional[int] = None) -> None:
        """Makes ``nbytes`` at ``offset`` (default: to the end) durable now.

        For an item of a persistent region, the bytes are on stable storage
        at the server holding them when it returns, whatever
        ``OPENFAM_PERSIST`` says (``quiet()`` does the same for every write
        issued before it). For a volatile item it only checks its arguments.
        Operations still in flight are not waited for. Raises OutOfRange
        past the end, InvalidArgument for 0 bytes.
        """
        offset = _u64(offset, "offset")
        if nbytes is None:
            nbytes = max(self.size - offset, 0)
        check(self._call("persist", self._h, offset, _u64(nbytes, "nbytes")))

    def put(self, buffer: Buffer, offset: int = 0, *, blocking: bool = True) -> None:
        """Writes the bytes of ``buffer`` at ``offset``.

        With ``blocking=False`` the write completes by the next ``quiet()``;
        do not change ``buffer`` before then. Raises OutOfRange past the end.
        """
        if offset.__class__ is not int or not 0 <= offset <= U64_MAX:
            offset = _u64(offset, "offset")
        c = self._bufcache
        if c[0] is buffer:
            addr = c[1]
            n = c[2]
            keep = c[3]
        else:
            addr, n, keep = readable(buffer)
        if blocking:
            check(self._call("put_blocking", addr, self._h, offset, n))
        else:
            self._queue.keep.append(keep)
            check(self._call("put_nonblocking", addr, self._h, offset, n))

    def gather(
        self,
        index: Index,
        dtype: DTypeLike = None,
        *,
        out: Optional[Buffer] = None,
        blocking: bool = True,
    ) -> Any:
        """Reads elements at ``index`` into a new array (or into ``out``).

        Element ``i`` is read from byte ``index[i] * itemsize`` of the item.
        ``index`` is a ``range``/``slice`` (a strided gather: start, step) or
        a sequence/numpy array of element indices (an indexed gather).
        ``dtype`` sets the element type (default: ``out.dtype`` for an
        array ``out``, else uint8). Returns the array (or ``out``).
        """
        idx = _as_index(index)
        n = len(idx) if isinstance(idx, np.ndarray) else idx[0]
        if dtype is None:
            dtype = out.dtype if isinstance(out, np.ndarray) else np.uint8
        dt = np.dtype(dtype)
        if out is None:
            out = np.empty(n, dtype=dt)
        addr, nbytes, keep = writable(out, "out")
        if nbytes != n * dt.itemsize:
            raise InvalidArgument(
                _EINVAL, "out has %d bytes; %d elements of %s need %d" % (nbytes, n, dt, n * dt.itemsize)
            )
        self._strided_or_indexed("gather", addr, idx, n, dt.itemsize, keep, blocking)
        return out

    def scatter(
        self,
        values: Buffer,
        index: Index,
        *,
        dtype: DTypeLike = None,
        blocking: bool = True,
    ) -> None:
        """Writes element ``i`` of ``values`` to byte ``index[i] * itemsize``.

        ``index`` is as for :meth:`gather`. The element size is ``dtype``'s,
        else that of ``values`` (a numpy array or typed memoryview), else 1.
        """
        idx = _as_index(index)
        n = len(idx) if isinstance(idx, np.ndarray) else idx[0]
        if dtype is not None:
            size = np.dtype(dtype).itemsize
        elif isinstance(values, np.ndarray):
            size = values.itemsize
        elif isinstance(values, memoryview):
            size = values.itemsize
        else:
            size = 1
        addr, nbytes, keep = readable(values, "values")
        if nbytes != n * size:
            raise InvalidArgument(
                _EINVAL, "values has %d bytes; %d elements of %d bytes need %d" % (nbytes, n, size, n * size)
            )
        self._strided_or_indexed("scatter", addr, idx, n, size, keep, blocking)

    def _strided_or_indexed(
        self, op: str, addr: Any, idx: Any, n: int, size: int, keep: Any, blocking: bool
    ) -> None:
        mode = "blocking" if blocking else "nonblocking"
        if not blocking:
            self._queue.keep.append((keep, idx))
        if isinstance(idx, np.ndarray):
            check(self._call("%s_%s_indexed" % (op, mode), addr, self._h, n, idx.ctypes.data, size))
        else:
            check(self._call("%s_%s_strided" % (op, mode), addr, self._h, n, idx[1], idx[2], size))

    # ---- atomics ----------------------------------------------------------

    def _amo(self, op: str, offset: int, dtype: DTypeLike, value: Any) -> None:
        t = _atomic_type(dtype)
        offset = _u64(offset, "offset")
        if t == "int128":
            if op != "set":
                raise InvalidArgument(_EINVAL, "%s has no int128 form (only set, fetch, compare_swap)" % op)
            _need_int128_abi()
            check(self._call("set_int128", self._h, offset, *_split128(_c_value(t, value))))
            return
        if op in ("and", "or", "xor") and t not in _capi.UNSIGNED:
            raise InvalidArgument(_EINVAL, "%s needs uint32 or uint64, not %s" % (op, t))
        check(self._call("%s_%s" % (op, t), self._h, offset, _c_value(t, value)))

    def _famo(self, op: str, offset: int, dtype: DTypeLike, *values: Any) -> Any:
        t = _atomic_type(dtype)
        offset = _u64(offset, "offset")
        if t == "int128":
            out = (ctypes.c_uint64 * 2)()
            if op == "fetch":
                check(self._call("fetch_int128", self._h, offset, ctypes.byref(out)))
            elif op == "compare_swap":
                _need_int128_abi()
                e = _split128(_c_value(t, values[0]))
                d = _split128(_c_value(t, values[1]))
                if self._ctx is None:
                    check(L.compare_swap_int128(self._h, offset, *e, *d, ctypes.byref(out)))
                else:
                    # Argument order follows the registers, not C's order.
                    check(L.ctx_compare_swap_int128(
                        self._ctx._h, self._h, offset, *e, ctypes.byref(out), *d))
            else:
                raise InvalidArgument(_EINVAL, "%s has no int128 form (only set, fetch, compare_swap)" % op)
            return _join128(out[0], out[1])
        if op in ("fetch_and", "fetch_or", "fetch_xor") and t not in _capi.UNSIGNED:
            raise InvalidArgument(_EINVAL, "%s needs uint32 or uint64, not %s" % (op, t))
        if op == "compare_swap" and t not in _capi.CAS_TYPES:
            raise InvalidArgument(_EINVAL, "compare_swap needs an integer type, not %s" % t)
        res = _capi.SCALARS[t]()
        args = [_c_value(t, v) for v in values]
        check(self._call("%s_%s" % (op, t), self._h, offset, *args, ctypes.byref(res)))
        return _NP_TYPES[t](res.value)

    def set(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> None:
        """Atomically stores ``value`` as ``dtype`` at ``offset``.

        Every atomic takes ``dtype`` as a numpy dtype (int32, int64, uint32,
        uint64, float32, float64) or the string ``"int128"`` where noted;
        ``offset`` must be a multiple of the operand size. Fetching atomics
        return a numpy scalar of ``dtype`` (a Python int for int128).
        """
        self._amo("set", offset, dtype, value)

    def add(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> None:
        """Atomically adds ``value`` (no result)."""
        self._amo("add", offset, dtype, value)

    def subtract(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> None:
        """Atomically subtracts ``value`` (no result)."""
        self._amo("subtract", offset, dtype, value)

    def min(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> None:
        """Atomically stores min(current, value) (no result)."""
        self._amo("min", offset, dtype, value)

    def max(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> None:
        """Atomically stores max(current, value) (no result)."""
        self._amo("max", offset, dtype, value)

    def and_(self, offset: int, value: Any, dtype: DTypeLike = np.uint64) -> None:
        """Atomically ANDs ``value`` in (uint32/uint64; no result)."""
        self._amo("and", offset, dtype, value)

    def or_(self, offset: int, value: Any, dtype: DTypeLike = np.uint64) -> None:
        """Atomically ORs ``value`` in (uint32/uint64; no result)."""
        self._amo("or", offset, dtype, value)

    def xor(self, offset: int, value: Any, dtype: DTypeLike = np.uint64) -> None:
        """Atomically XORs ``value`` in (uint32/uint64; no result)."""
        self._amo("xor", offset, dtype, value)

    def fetch(self, offset: int, dtype: DTypeLike = np.int64) -> Any:
        """Atomically reads the value at ``offset`` (int128 allowed)."""
        return self._famo("fetch", offset, dtype)

    def fetch_add(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> Any:
        """Atomically adds ``value``; returns the previous value."""
        return self._famo("fetch_add", offset, dtype, value)

    def fetch_subtract(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> Any:
        """Atomically subtracts ``value``; returns the previous value."""
        return self._famo("fetch_subtract", offset, dtype, value)

    def fetch_min(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> Any:
        """Atomically stores min(current, value); returns the previous value."""
        return self._famo("fetch_min", offset, dtype, value)

    def fetch_max(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> Any:
        """Atomically stores max(current, value); returns the previous value."""
        return self._famo("fetch_max", offset, dtype, value)

    def fetch_and(self, offset: int, value: Any, dtype: DTypeLike = np.uint64) -> Any:
        """Atomically ANDs ``value`` in; returns the previous value."""
        return self._famo("fetch_and", offset, dtype, value)

    def fetch_or(self, offset: int, value: Any, dtype: DTypeLike = np.uint64) -> Any:
        """Atomically ORs ``value`` in; returns the previous value."""
        return self._famo("fetch_or", offset, dtype, value)

    def fetch_xor(self, offset: int, value: Any, dtype: DTypeLike = np.uint64) -> Any:
        """Atomically XORs ``value`` in; returns the previous value."""
        return self._famo("fetch_xor", offset, dtype, value)

    def swap(self, offset: int, value: Any, dtype: DTypeLike = np.int64) -> Any:
        """Atomically stores ``value``; returns the previous value."""
        return self._famo("swap", offset, dtype, value)

    def compare_swap(self, offset: int, expected: Any, desired: Any, dtype: DTypeLike = np.int64) -> Any:
        """Stores ``desired`` if the word equals ``expected``; returns the old value.

        The swap happened exactly when the returned value equals ``expected``.
        Integer types and ``"int128"`` only.
        """
        return self._famo("compare_swap", offset, dtype, expected, desired)

    # ---- mapping ------------------------------------------------------------

    def map(self) -> memoryview:
        """A writable zero-copy memoryview of the item (format 'B').

        Only where the item's memory is on this host (the embedded default, a
        local famd); elsewhere raises :class:`Unimplemented`. Loads and
        stores through the view are plain memory accesses: order them with
        other PEs through atomics or barriers. The view stays valid until
        :meth:`unmap`, :meth:`close`, :meth:`deallocate` or finalize; those
        release it and refuse (BufferError) while numpy arrays from
        :meth:`as_array` still use it.
        """
        if self._ctx is not None:
            raise InvalidOperation(_EINVALIDOP, "map the item itself, not its context view")
        if self._view is not None:
            return self._view
        if self._carr is not None:
            self._view = memoryview(self._carr).cast("B")
            return self._view
        p = L.map(self._h)
        if not p:
            err = last_error()
            if err.code == _EUNIMPL:
                raise Unimplemented(
                    _EUNIMPL,
                    "item %r is not in memory local to this process (%s); use "
                    "get_into/put instead of map/as_array" % (self.name, err.message),
                )
            raise err
        carr = (ctypes.c_char * self.size).from_address(p)
        # Views keep the item alive, so garbage collection cannot unmap
        # memory that an array still points into.
        carr._owner = self  # type: ignore[attr-defined]
        self._map_addr = p
        self._carr = carr
        self._view = memoryview(carr).cast("B")
        return self._view

    def as_array(self, dtype: DTypeLike = np.uint8, shape: Optional[Union[int, Tuple[int, ...]]] = None,
                 *, offset: int = 0) -> np.ndarray:
        """A zero-copy numpy array over the mapped item (see :meth:`map`).

        ``shape`` defaults to as many ``dtype`` elements as fit after
        ``offset`` bytes. Writes to the array are writes to FAM.
        """
        view = self.map()
        # Each array gets its own buffer export of the mapped block (not of
        # the cached view), so _release_views() can count it.
        carr: Any = self._carr
        offset = _u64(offset, "offset")
        if offset > len(view):
            raise InvalidArgument(
                _EINVAL, "offset %d is past the end of item %r (%d bytes)" % (offset, self._name, len(view)))
        dt = np.dtype(dtype)
        if shape is None:
            count = (len(view) - offset) // dt.itemsize
            return np.frombuffer(carr, dtype=dt, count=count, offset=offset)
        shp = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        count = int(np.prod(shp, dtype=np.int64))
        if offset < 0 or offset + count * dt.itemsize > len(view):
            raise InvalidArgument(
                _EINVAL, "shape %s of %s at offset %d exceeds the item's %d bytes" % (shp, dt, offset, len(view))
            )
        return np.frombuffer(carr, dtype=dt, count=count, offset=offset).reshape(shp)

    def unmap(self) -> None:
        """Releases the mapping made by :meth:`map` (a no-op if unmapped).

        Raises BufferError while arrays from :meth:`as_array` still exist.
        """
        if self._carr is None:
            return
        if not self._release_views():
            raise BufferError(
                "numpy arrays or memoryviews made from item %r's map() still "
                "exist; delete them before unmap/close/deallocate" % self._name
            )
        self._carr = None
        addr, self._map_addr = self._map_addr, 0
        check(L.unmap(addr, self._h))

    def _release_views(self) -> bool:
        """Releases the cached view; True when no other view of the map is left.

        Every memoryview or array over the mapped block holds a buffer export
        of the ctypes array, and each export holds one reference to it, so
        its reference count tells whether anything still points into the
        mapping (slices of the cached view included).
        """
        if self._view is not None:
            try:
                self._view.release()
            except BufferError:
                return False
            self._view = None
        # Our attribute and getrefcount's own argument: nothing else.
        return sys.getrefcount(self._carr) <= 2

    # ---- life cycle ---------------------------------------------------------

    def close(self) -> None:
        """Releases the handle; the item stays in FAM. Idempotent."""
        if self._ctx is not None:
            raise InvalidOperation(_EINVALIDOP, "close the item itself, not its context view")
        if self._h is None:
            return
        self.unmap()
        h, self._h = self._h, None
        self._bufcache = (_NOBUF, 0, 0, None)
        check(L.close(h))

    def deallocate(self) -> None:
        """Frees the item's memory and name and releases the handle."""
        if self._ctx is not None:
            raise InvalidOperation(_EINVALIDOP, "deallocate the item itself, not its context view")
        self.unmap()
        check(L.deallocate(self._h))
        self._h = None
        self._bufcache = (_NOBUF, 0, 0, None)

    def __enter__(self) -> "DataItem":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _release_on_finalize(self) -> None:
        if self._carr is not None:
            if not self._release_views():
                warnings.warn(
                    "arrays over item %r's mapped memory outlive finalize; "
                    "touching them is undefined" % self._name,
                    ResourceWarning,
                    stacklevel=3,
                )
            self._view = None
            self._carr = None
        self._h = None
        self._bufcache = (_NOBUF, 0, 0, None)

    def __del__(self) -> None:
        if (
            getattr(self, "_h", None) is not None
            and self._ctx is None
            and not _capi.forked
            and self._fam._active
        ):
            try:
                if self._carr is None:
                    L.close(self._h)
            except Exception:
                pass

    def __repr__(self) -> str:
        kind = "DataItem" if self._ctx is None else "DataItem (context view)"
        label = repr(self._name) if self._name else "(unnamed)"
        if self._h is None:
            return "<openfam.%s %s (closed)>" % (kind, label)
        try:
            st = self.stat()
            g = self.global_descriptor
        except FamError as e:
            return "<openfam.%s %s (%s)>" % (kind, label, e.name)
        return "<openfam.%s %s %s, mode %s, %s, region %d offset %#x%s>" % (
            kind, repr(st.name) if st.name else "(unnamed)", _human(st.size), oct(st.mode),
            st.memory_type, g.region_id, g.offset, ", mapped" if self._carr is not None else "")

    def _repr_html_(self) -> str:
        label = html.escape(self._name or "(unnamed)")
        head = "<b>openfam.DataItem</b> <code>%s</code>" % label
        if self._h is None:
            return head + " (closed)"
        try:
            st = self.stat()
            g = self.global_descriptor
        except FamError as e:
            return "%s (%s)" % (head, html.escape(str(e)))
        extra = "<tr><th style='text-align:left'>global descriptor</th><td style='text-align:left'>" \
                "region %d, offset %#x</td></tr>" % (g.region_id, g.offset)
        return "%s<table>%s%s</table>" % (head, st._html_rows(), extra)


class Context:
    """A separate completion queue for non-blocking operations.

    ``with fam.context() as ctx:`` opens it and closes it on exit. Operations
    go through it via ``ctx.bind(item)``, which returns a view of the item
    with the same data-path and atomic methods; :meth:`quiet` then waits only
    for this context's operations. Safe to share between threads.
    """

    def __init__(self, fam: Fam) -> None:
        self._fam = fam
        self._queue = _Queue()
        h = L.context_open()
        if not h:
            raise last_error()
        self._h: Optional[int] = h
        fam._children.add(self)

    def bind(self, item: DataItem) -> DataItem:
        """The item seen through this context (data path and atomics only).

        The view shares the item's handle: closing the item ends it too.
        """
        if item._h is None:
            raise InvalidArgument(_EINVAL, "cannot bind a closed item")
        v = DataItem(self._fam, item._h, item._name, ctx=self)
        v._size = item._size
        return v

    def quiet(self) -> None:
        """Waits for this context's operations only; raises their first error."""
        try:
            check(L.ctx_quiet(self._h))
        finally:
            self._queue.keep.clear()

    def fence(self) -> None:
        """Orders this context's earlier operations before its later ones."""
        check(L.ctx_fence(self._h))

    def progress(self) -> int:
        """The number of this context's operations not yet complete."""
        return int(L.ctx_progress(self._h))

    def close(self) -> None:
        """Completes this context's operations and closes it. Idempotent."""
        if self._h is None:
            return
        h, self._h = self._h, None
        try:
            check(L.context_close(h))
        finally:
            self._queue.keep.clear()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _release_on_finalize(self) -> None:
        self._h = None
        self._queue.keep.clear()

    def __repr__(self) -> str:
        return "<openfam.Context %s>" % ("closed" if self._h is None else "open")


def library_path() -> str:
    """Loads the library if needed and returns the path it came from."""
    _capi.load()
    return _capi.loaded_path() or ""
