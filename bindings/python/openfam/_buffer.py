"""Private: the one gate every local buffer passes through.

Any object with the buffer protocol is accepted (numpy arrays, bytes,
bytearray, memoryview, array.array, mmap, ctypes arrays). Memory is never
copied: the C call gets the address of the caller's memory. The returned
``keep`` object holds a buffer export, so the memory cannot be freed or moved
(a bytearray cannot be resized) while a non-blocking operation still uses it.
"""

from __future__ import annotations

import ctypes
from typing import Any, Tuple

import numpy as np

from ._errors import InvalidArgument

_EINVAL = 4
# Zero-length buffers have no address of their own; the library still gets a
# valid pointer so that its argument checks (offset range) run as usual.
_EMPTY = ctypes.create_string_buffer(1)
_EMPTY_ADDR = ctypes.addressof(_EMPTY)


def _view(buf: Any, what: str) -> memoryview:
    try:
        mv = memoryview(buf)
    except TypeError:
        raise TypeError(
            "%s must support the buffer protocol (numpy array, bytes, bytearray, "
            "memoryview, ...), not %s" % (what, type(buf).__name__)
        ) from None
    if not mv.c_contiguous:
        raise InvalidArgument(
            _EINVAL,
            "%s must be C-contiguous (use numpy.ascontiguousarray or a copy)" % what,
        )
    return mv


def writable(buf: Any, what: str = "buffer") -> Tuple[int, int, Any]:
    """Returns (address, nbytes, keep) for a buffer the library will write."""
    mv = _view(buf, what)
    if mv.readonly:
        raise TypeError("%s is read-only; get_into/gather need a writable buffer" % what)
    n = mv.nbytes
    if n == 0:
        return _EMPTY_ADDR, 0, mv
    cobj = ctypes.c_char.from_buffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv)
    return ctypes.addressof(cobj), n, cobj


def readable(buf: Any, what: str = "buffer") -> Tuple[Any, int, Any]:
    """Returns (pointer argument, nbytes, keep) for a buffer the library reads.

    The pointer argument is an int address, or the bytes object itself, which
    ctypes passes as a pointer to its contents.
    """
    if type(buf) is bytes:
        return (buf if buf else _EMPTY_ADDR), len(buf), buf
    mv = _view(buf, what)
    n = mv.nbytes
    if n == 0:
        return _EMPTY_ADDR, 0, mv
    if not mv.readonly:
        cobj = ctypes.c_char.from_buffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv)
        return ctypes.addressof(cobj), n, cobj
    # Read-only memory (bytes slices, read-only arrays): numpy exposes the
    # address without needing a writable export.
    arr = np.frombuffer(mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv, dtype=np.uint8)
    return arr.__array_interface__["data"][0], n, arr


def index_array(index: Any) -> np.ndarray:
    """Element indices as a contiguous uint64 array (checked non-negative)."""
    arr = np.asarray(index)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype.kind not in "iu":
        if arr.size == 0:
            arr = arr.astype(np.uint64)
        else:
            raise InvalidArgument(_EINVAL, "indices must be integers, not %s" % arr.dtype)
    if arr.dtype.kind == "i" and arr.size and int(arr.min()) < 0:
        raise InvalidArgument(_EINVAL, "indices must be non-negative")
    return np.ascontiguousarray(arr, dtype=np.uint64)
