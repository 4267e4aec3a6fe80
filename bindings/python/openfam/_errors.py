"""Exception classes: one FamError subclass per family of C error codes."""

from __future__ import annotations

from typing import ClassVar, Dict, Tuple, Type

# Positive FAM_E* codes from include/openfam.h, by name. The entries are written
# by `go run ./internal/gentables` from internal/gentables/errors.table (edit the
# table, not them); `make verify-tables` fails if they differ.
CODES: Dict[str, int] = {
    # BEGIN GENERATED from internal/gentables/errors.table; DO NOT EDIT
    "FAM_EUNKNOWN": 1,
    "FAM_ENOPERM": 2,
    "FAM_ETIMEOUT": 3,
    "FAM_EINVAL": 4,
    "FAM_ELIBFABRIC": 5,
    "FAM_ESHM": 6,
    "FAM_ENOTCREATED": 7,
    "FAM_ENOTFOUND": 8,
    "FAM_EEXIST": 9,
    "FAM_EALLOCATOR": 10,
    "FAM_ERPC": 11,
    "FAM_EPMI": 12,
    "FAM_ERANGE": 13,
    "FAM_ENOSPACE": 14,
    "FAM_ENULLPTR": 15,
    "FAM_EUNIMPL": 16,
    "FAM_ERESOURCE": 17,
    "FAM_EINVALIDOP": 18,
    "FAM_ERPCCLIENTNOTFOUND": 19,
    "FAM_EMEMSERVLISTEMPTY": 20,
    "FAM_EMETADATA": 21,
    "FAM_EMEMORY": 22,
    "FAM_ENAMETOOLONG": 23,
    "FAM_EATLQUEUEFULL": 24,
    "FAM_EATLQUEUEINSERT": 25,
    "FAM_EATLNOTENABLED": 26,
    "FAM_EATL": 27,
    "FAM_EBACKUPNOTCREATED": 28,
    "FAM_EBACKUPNOTFOUND": 29,
    "FAM_EBACKUPINFONOTFOUND": 30,
    "FAM_ENOTPWRTWO": 31,
    # END GENERATED
}
_NAMES: Dict[int, str] = {v: k for k, v in CODES.items()}


def _codes(*names: str) -> Tuple[int, ...]:
    return tuple(CODES[n] for n in names)


class FamError(Exception):
    """An error reported by libopenfam (or detected by the binding first).

    ``FamError(code, message)`` builds the subclass that owns ``code``, so
    ``FamError(8, "x")`` is a :class:`NotFound`; catching ``FamError`` catches
    every library error. ``code`` is the positive ``FAM_E*`` number of
    ``include/openfam.h`` (what ``fam_errcode()`` returns) and ``name`` its
    macro name.
    """

    #: Codes whose errors become this class; the base owns any code no
    #: subclass claims (including codes a newer library may add).
    codes: ClassVar[Tuple[int, ...]] = ()
    code: int
    message: str

    def __new__(cls, code: int = 1, message: str = "", *args: object) -> "FamError":
        if cls is FamError:
            cls = _BY_CODE.get(int(code), FamError)
        return super().__new__(cls)

    def __init__(self, code: int = 1, message: str = "", *args: object) -> None:
        super().__init__(code, message, *args)
        self.code = int(code)
        self.message = str(message)

    @property
    def name(self) -> str:
        """The C macro name of :attr:`code`, e.g. ``"FAM_ENOTFOUND"``."""
        return _NAMES.get(self.code, "FAM_E%d" % self.code)

    def __str__(self) -> str:
        return "%s [%s]" % (self.message or "error", self.name)


class InvalidArgument(FamError, ValueError):
    """A bad argument: null or released handle, misaligned offset, bad size."""

    codes = _codes("FAM_EINVAL", "FAM_ENULLPTR", "FAM_ENOTPWRTWO")


class NameTooLong(InvalidArgument):
    """A region or item name longer than ``openfam.NAME_MAX`` bytes."""

    codes = _codes("FAM_ENAMETOOLONG")


class PermissionDenied(FamError):
    """The caller's uid/gid lacks the permission the operation needs."""

    codes = _codes("FAM_ENOPERM")


class NotFound(FamError, LookupError):
    """No region, item or backup by that name or descriptor."""

    codes = _codes("FAM_ENOTFOUND", "FAM_EBACKUPNOTFOUND", "FAM_EBACKUPINFONOTFOUND")


class AlreadyExists(FamError):
    """A region, item or backup by that name exists already."""

    codes = _codes("FAM_EEXIST")


class OutOfRange(FamError, IndexError):
    """An offset or length reaches past the end of the item."""

    codes = _codes("FAM_ERANGE")


class NoSpace(FamError):
    """The region or the memory servers have no room, or a queue is full."""

    codes = _codes("FAM_ENOSPACE", "FAM_EATLQUEUEFULL")


class ResourceBusy(FamError):
    """A resource is in use or exhausted: another process holds the embedded
    store (start famd to share it), a connection or file limit was reached."""

    codes = _codes("FAM_ERESOURCE")


class Unavailable(FamError):
    """A memory server, the launcher or the transport cannot be reached."""

    codes = _codes(
        "FAM_ERPC", "FAM_ELIBFABRIC", "FAM_EPMI", "FAM_ERPCCLIENTNOTFOUND", "FAM_EMEMSERVLISTEMPTY"
    )


class Timeout(Unavailable):
    """An operation did not complete in time."""

    codes = _codes("FAM_ETIMEOUT")


class Unimplemented(FamError):
    """The operation is not available here (e.g. mapping remote memory)."""

    codes = _codes("FAM_EUNIMPL", "FAM_EATLNOTENABLED")


class InvalidOperation(FamError):
    """The operation is not allowed in the current state."""

    codes = _codes("FAM_EINVALIDOP")


class ForkedChildError(InvalidOperation):
    """The library was used in a child made by ``fork()`` without ``exec``.

    The library runs threads that a forked child does not inherit, so a call
    there could hang. Start worker processes with the ``'spawn'`` (or
    ``'forkserver'``) method of :mod:`multiprocessing` instead.
    """

    codes = _codes()


class InternalError(FamError):
    """A failure inside the library or its storage (allocator, metadata, ...)."""

    codes = _codes(
        "FAM_EUNKNOWN",
        "FAM_ESHM",
        "FAM_ENOTCREATED",
        "FAM_EALLOCATOR",
        "FAM_EMETADATA",
        "FAM_EMEMORY",
        "FAM_EATLQUEUEINSERT",
        "FAM_EATL",
        "FAM_EBACKUPNOTCREATED",
    )


class LibraryNotFoundError(ImportError):
    """libopenfam.so.0 could not be loaded from any place the package looks.

    Raised on first use, not on ``import openfam``, so that the package can be
    imported (for type checking or documentation) without the library.
    """


_BY_CODE: Dict[int, Type[FamError]] = {}
for _cls in (
    InvalidArgument,
    NameTooLong,
    PermissionDenied,
    NotFound,
    AlreadyExists,
    OutOfRange,
    NoSpace,
    ResourceBusy,
    Unavailable,
    Timeout,
    Unimplemented,
    InvalidOperation,
    InternalError,
):
    for _c in _cls.codes:
        _BY_CODE[_c] = _cls
del _cls, _c
