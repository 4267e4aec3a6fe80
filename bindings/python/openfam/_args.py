"""Private: the one gate every integer argument (size, offset, mode) passes.

ctypes converts whatever it is given without complaint where it matters
most: a negative size becomes 2**64 - 1, a mode beyond 32 bits loses its
high bits, and ``int("0644")`` would read an octal-looking string as decimal
644. So every size, offset and mode is checked here, once, before it reaches
a C call:

- only integers are accepted (``int``, numpy integers, anything with
  ``__index__``); ``str``, ``float`` and ``bool`` raise :class:`TypeError`
  naming the value, since each is a likely mistake (``"0644"``, ``1e6``,
  ``True``) that a conversion would silently turn into a different number;
- an integer outside what the C parameter holds raises
  :class:`InvalidArgument` (FAM_EINVAL) naming the value, and nothing is
  created or changed.
"""

from __future__ import annotations

import operator
from typing import Any

from ._errors import InvalidArgument

_EINVAL = 4
U64_MAX = (1 << 64) - 1
MODE_T_MAX = (1 << 32) - 1


def integer(value: Any, what: str, hint: str = "") -> int:
    """Returns ``value`` as a Python int, or raises TypeError naming it.

    ``hint`` is appended to the message (for example how to write a mode).
    """
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(
            "%s must be an int%s, not %s %r" % (what, hint, type(value).__name__, value)
        )
    return operator.index(value)


def u64(value: Any, what: str) -> int:
    """A size or offset: an int from 0 to 2**64 - 1 (uint64_t), else an error."""
    v = integer(value, what)
    if v < 0:
        raise InvalidArgument(_EINVAL, "%s %d is negative" % (what, v))
    if v > U64_MAX:
        raise InvalidArgument(_EINVAL, "%s %d does not fit in 64 bits" % (what, v))
    return v


def mode(value: Any) -> int:
    """A permission mode as the C call takes it (mode_t).

    Bits outside 0o777 are passed through so that the library's FAM_EINVAL,
    which names the value, surfaces; only a value mode_t cannot hold is
    refused here, since ctypes would silently keep its low 32 bits
    (2**32 + 0o600 would become 0o600).
    """
    m = integer(value, "mode", " such as 0o644")
    if not 0 <= m <= MODE_T_MAX:
        raise InvalidArgument(_EINVAL, "mode %d is not a permission mode (0 to 0o777)" % m)
    return m
