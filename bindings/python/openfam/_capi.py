"""Private: loads libopenfam.so.0 and declares every C function the package uses.

Nothing here is public. The functions are attributes of the single namespace
object ``L`` (filled by :func:`load`) and the public layer looks them up there
on every call, which is what lets :func:`_poison_after_fork` swap all of them
for a raiser in a forked child at no cost to the parent.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import threading
from ctypes import (
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_uint,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional

from ._errors import FamError, ForkedChildError, LibraryNotFoundError

SONAME = "libopenfam.so.0"
NAME_MAX = 255
REGION_OFFSET = 0xFFFFFFFFFFFFFFFF

c_mode_t = c_uint  # mode_t is unsigned int on Linux


class RegionAttr(Structure):
    _fields_ = [
        ("redundancy_level", c_int),
        ("memory_type", c_int),
        ("interleave_enable", c_int),
        ("permission_level", c_int),
    ]


class GlobalDesc(Structure):
    _fields_ = [("region_id", c_uint64), ("offset", c_uint64)]


class StatT(Structure):
    _fields_ = [
        ("size", c_uint64),
        ("perm", c_mode_t),
        ("name", c_char_p),
        ("uid", c_uint32),
        ("gid", c_uint32),
        ("region_attributes", RegionAttr),
        ("num_memservers", c_uint64),
        ("interleave_size", c_uint64),
        ("memory_servers", c_uint64 * 256),
    ]


OPTION_FIELDS = (
    "default_region_name",
    "cis_server",
    "grpc_port",
    "libfabric_provider",
    "fam_thread_model",
    "cis_interface_type",
    "openfam_model",
    "fam_context_model",
    "num_consumer",
    "runtime",
    "fam_default_memory_type",
    "if_device",
)


class OptionsT(Structure):
    _fields_ = [(f, c_char_p) for f in OPTION_FIELDS] + [  # type: ignore[assignment]
        ("local_buf_addr", c_void_p),
        ("local_buf_size", c_uint64),
    ]


assert ctypes.sizeof(RegionAttr) == 16 and ctypes.sizeof(GlobalDesc) == 16

# Atomic value types by the C suffix.
SCALARS: Dict[str, Any] = {
    "int32": c_int32,
    "int64": c_int64,
    "uint32": c_uint32,
    "uint64": c_uint64,
    "float": c_float,
    "double": c_double,
}
UNSIGNED = ("uint32", "uint64")
ARITH_OPS = ("add", "subtract", "min", "max")
BIT_OPS = ("and", "or", "xor")
CAS_TYPES = ("int32", "int64", "uint32", "uint64")

# int128 is passed by value as two 64-bit halves; see _declare_int128.
INT128_SUPPORTED = platform.machine() in ("x86_64", "AMD64")

class _Library(SimpleNamespace):
    """The library's functions by name, filled by :func:`load`. Before the
    library is loaded (before any ``Fam.initialize``) a call through it is
    the library's own "not initialized" error, not an AttributeError."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        from ._errors import InvalidArgument

        raise InvalidArgument(
            4, "OpenFAM is not initialized (call Fam.initialize() or use `with openfam.Fam() as fam:` first)"
        )


L = _Library()
_lock = threading.Lock()
_loaded_path: Optional[str] = None
forked = False


def _candidates() -> List[str]:
    env = os.environ.get("OPENFAM_LIBRARY")
    if env:
        # An explicit choice is the only one tried, so a typo is not hidden by
        # some other copy of the library being found instead.
        return [env]
    here = Path(__file__).resolve().parent
    out = [str(here / "_native" / SONAME)]
    # A source checkout: bindings/python/openfam -> repository build/lib.
    out.append(str(here.parents[2] / "build" / "lib" / SONAME))
    out.append(SONAME)  # the dynamic linker's search path
    found = ctypes.util.find_library("openfam")
    if found:
        out.append(found)
    return out


def load() -> SimpleNamespace:
    """Loads the library once per process and returns the namespace ``L``."""
    global _loaded_path
    if forked:
        raise ForkedChildError(18, _FORK_MSG)
    if _loaded_path is not None:
        return L
    with _lock:
        if _loaded_path is not None:
            return L
        tried = []
        for cand in _candidates():
            if os.sep in cand and not os.path.exists(cand):
                tried.append("%s (no such file)" % cand)
                continue
            try:
                lib = ctypes.CDLL(cand)
            except OSError as e:
                tried.append("%s (%s)" % (cand, e))
                continue
            _declare(lib)
            os.register_at_fork(after_in_child=_poison_after_fork)
            _loaded_path = getattr(lib, "_name", cand)
            return L
        raise LibraryNotFoundError(
            "cannot load %s; tried:\n  %s\nBuild it with `make lib` in the "
            "repository, install the package from a built tree, or set "
            "OPENFAM_LIBRARY to the library's path." % (SONAME, "\n  ".join(tried))
        )


def loaded_path() -> Optional[str]:
    """The path the library was loaded from, or None before the first use."""
    return _loaded_path


def _fn(lib: ctypes.CDLL, name: str, restype: Any, *argtypes: Any, into: Any = None) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    setattr(L if into is None else into, name[4:] if name.startswith("fam_") else name, f)


def _declare(lib: ctypes.CDLL) -> None:
    vp, u64, i = c_void_p, c_uint64, c_int
    _fn(lib, "fam_errmsg", c_char_p)
    _fn(lib, "fam_errcode", i)
    _fn(lib, "fam_initialize", i, c_char_p, POINTER(OptionsT))
    _fn(lib, "fam_finalize", i, c_char_p)
    _fn(lib, "fam_barrier_all", i)
    _fn(lib, "fam_abort", i, i)
    _fn(lib, "fam_list_options", vp)
    _fn(lib, "fam_get_option", vp, c_char_p)
    # Listing (not in OpenFAM): malloc'd strings, released with free().
    _fn(lib, "fam_list_regions", vp)
    _fn(lib, "fam_list_items", vp, vp)

    _fn(lib, "fam_create_region", vp, c_char_p, u64, c_mode_t, POINTER(RegionAttr))
    _fn(lib, "fam_lookup_region", vp, c_char_p)
    _fn(lib, "fam_destroy_region", i, vp)
    _fn(lib, "fam_resize_region", i, vp, u64)
    _fn(lib, "fam_change_region_permissions", i, vp, c_mode_t)
    _fn(lib, "fam_stat_region", i, vp, POINTER(StatT))
    _fn(lib, "fam_region_global", i, vp, POINTER(GlobalDesc))
    _fn(lib, "fam_region_from_global", vp, GlobalDesc)

    _fn(lib, "fam_allocate", vp, c_char_p, u64, c_mode_t, vp)
    _fn(lib, "fam_lookup", vp, c_char_p, c_char_p)
    _fn(lib, "fam_deallocate", i, vp)
    _fn(lib, "fam_close", i, vp)
    _fn(lib, "fam_change_permissions", i, vp, c_mode_t)
    _fn(lib, "fam_stat", i, vp, POINTER(StatT))
    _fn(lib, "fam_desc_global", i, vp, POINTER(GlobalDesc))
    _fn(lib, "fam_desc_from_global", vp, GlobalDesc)
    _fn(lib, "fam_map", vp, vp)
    _fn(lib, "fam_unmap", i, vp, vp)
    _fn(lib, "fam_copy", vp, vp, u64, vp, u64, u64)
    _fn(lib, "fam_copy_wait", i, vp)

    _fn(lib, "fam_fence", i)
    _fn(lib, "fam_quiet", i)
    _fn(lib, "fam_progress", u64)
    _fn(lib, "fam_context_open", vp)
    _fn(lib, "fam_context_close", i, vp)
    _fn(lib, "fam_ctx_fence", i, vp)
    _fn(lib, "fam_ctx_quiet", i, vp)
    _fn(lib, "fam_ctx_progress", u64, vp)
    _fn(lib, "fam_persist", i, vp, u64, u64)
    _fn(lib, "fam_ctx_persist", i, vp, vp, u64, u64)

    for pre, ctx in (("fam_", ()), ("fam_ctx_", (vp,))):
        for mode in ("blocking", "nonblocking"):
            for op in ("get", "put"):
                _fn(lib, "%s%s_%s" % (pre, op, mode), i, *ctx, vp, vp, u64, u64)
            for op in ("gather", "scatter"):
                _fn(lib, "%s%s_%s_strided" % (pre, op, mode), i, *ctx, vp, vp, u64, u64, u64, u64)
                _fn(lib, "%s%s_%s_indexed" % (pre, op, mode), i, *ctx, vp, vp, u64, vp, u64)
        for t, ct in SCALARS.items():
            _fn(lib, "%sset_%s" % (pre, t), i, *ctx, vp, u64, ct)
            _fn(lib, "%sfetch_%s" % (pre, t), i, *ctx, vp, u64, POINTER(ct))
            _fn(lib, "%sswap_%s" % (pre, t), i, *ctx, vp, u64, ct, POINTER(ct))
            ops = ARITH_OPS + (BIT_OPS if t in UNSIGNED else ())
            for op in ops:
                _fn(lib, "%s%s_%s" % (pre, op, t), i, *ctx, vp, u64, ct)
                _fn(lib, "%sfetch_%s_%s" % (pre, op, t), i, *ctx, vp, u64, ct, POINTER(ct))
        for t in CAS_TYPES:
            ct = SCALARS[t]
            _fn(lib, "%scompare_swap_%s" % (pre, t), i, *ctx, vp, u64, ct, ct, POINTER(ct))
        _fn(lib, "%sfetch_int128" % pre, i, *ctx, vp, u64, POINTER(c_uint64 * 2))
    if INT128_SUPPORTED:
        _declare_int128(lib)

    libc = ctypes.CDLL(None)
    _fn(libc, "free", None, vp)


def _declare_int128(lib: ctypes.CDLL, into: Any = None) -> None:
    """Declares the by-value __int128 functions for the x86-64 System V ABI.

    ctypes has no 128-bit integer type. On x86-64 SysV an __int128 argument
    takes two consecutive integer registers (low half first) when two are
    free, otherwise it goes whole onto the stack (16-byte aligned) and later
    arguments still take the registers left. Every declaration below lists
    64-bit halves in the order the caller's registers and stack slots are
    filled, which is not always the C parameter order (see the ctx
    compare-swap). tests/test_int128_abi.py checks this against a C compiler.
    """
    vp, u64, i = c_void_p, c_uint64, c_int
    out = POINTER(c_uint64 * 2)
    # d, off, v(lo, hi): rdi rsi rdx rcx r8 -> all registers
    _fn(lib, "fam_set_int128", i, vp, u64, u64, u64, into=into)
    # c, d, off, v(lo, hi): rdi rsi rdx rcx r8
    _fn(lib, "fam_ctx_set_int128", i, vp, vp, u64, u64, u64, into=into)
    # d, off, exp(rdx, rcx), des(r8, r9), out -> stack[0]
    _fn(lib, "fam_compare_swap_int128", i, vp, u64, u64, u64, u64, u64, out, into=into)
    # c, d, off, exp(rcx, r8); des needs two registers but only r9 is left,
    # so des goes to stack[0..1] and out takes r9.
    _fn(lib, "fam_ctx_compare_swap_int128", i, vp, vp, u64, u64, u64, out, u64, u64, into=into)


_FORK_MSG = (
    "libopenfam was used in a child created by fork() without exec; the "
    "library cannot run there. Use multiprocessing.set_start_method('spawn') "
    "(or a 'spawn' context) for worker processes."
)


def _poison_after_fork() -> None:
    global forked
    forked = True

    def refuse(*_a: object, **_k: object) -> Any:
        raise ForkedChildError(18, _FORK_MSG)

    for name in list(vars(L)):
        setattr(L, name, refuse)


def last_error() -> FamError:
    """The calling thread's last library failure as a FamError subclass."""
    code = L.errcode()
    msg = L.errmsg()
    text = msg.decode("utf-8", "replace") if msg else ""
    return FamError(code if code > 0 else 1, text or "libopenfam call failed")


def check(rc: int) -> None:
    """Raises the FamError for a negative return code of an int function."""
    if rc < 0:
        err = last_error()
        if err.code != -rc:
            # The thread-local message belongs to some other failure; keep the
            # code the call returned, which is authoritative.
            err = FamError(-rc, err.message)
        raise err


def free(p: int) -> None:
    L.free(p)

