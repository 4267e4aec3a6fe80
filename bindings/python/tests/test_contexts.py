"""Contexts: a separate completion queue per context."""

import numpy as np
import pytest

import openfam
from openfam import _capi


def test_context_data_path_and_quiet(fam, item):
    with fam.context() as ctx:
        v = ctx.bind(item)
        assert "context view" in repr(v)
        src = np.arange(100, dtype=np.int32)
        v.put(src, 0, blocking=False)
        ctx.quiet()
        out = np.zeros(100, dtype=np.int32)
        v.get_into(out, blocking=False)
        ctx.fence()
        ctx.quiet()
        np.testing.assert_array_equal(out, src)
        assert ctx.progress() == 0
        assert v.gather(range(0, 10, 3), np.int32).tolist() == [0, 3, 6, 9]
        v.scatter(np.array([-1, -2], dtype=np.int32), [98, 99], blocking=False)
        ctx.quiet()
        assert v.get(8, 98 * 4) == np.array([-1, -2], dtype=np.int32).tobytes()
        out2 = np.zeros(4, dtype=np.int32)
        v.get_into(out2, 4)
        assert out2.tolist() == [1, 2, 3, 4]
    assert "closed" in repr(ctx)
    ctx.close()  # idempotent


def test_context_quiet_covers_only_its_own_operations(fam, item):
    """Non-blocking ops on ctx A complete at A.quiet(); B's quiet is independent.

    Completion can happen early, so the check is on what each quiet
    guarantees: after A.quiet(), A's writes are visible, whatever B did.
    """
    with fam.context() as a, fam.context() as b:
        va, vb = a.bind(item), b.bind(item)
        for i in range(32):
            va.put(np.full(8, i, dtype=np.uint8), 0, blocking=False)
            vb.put(np.full(8, 100 + i, dtype=np.uint8), 8, blocking=False)
        a.quiet()
        assert a.progress() == 0
        assert item.get(8, 0) == bytes([31]) * 8
        b.quiet()
        assert item.get(8, 8) == bytes([131]) * 8


def test_context_atomics(fam, item):
    with fam.context() as ctx:
        v = ctx.bind(item)
        v.set(0, 10, np.int64)
        assert v.fetch_add(0, 5, np.int64) == 10
        v.add(0, 1, np.int64)
        assert v.compare_swap(0, 16, 1, np.int64) == 16
        assert v.fetch_or(8, 6, np.uint32) == 0
        v.xor(8, 2, np.uint32)
        assert item.fetch(8, np.uint32) == 4
        assert v.swap(16, 2.5, np.float64) == 0.0
        assert item.fetch(0, np.int64) == 1


@pytest.mark.skipif(not _capi.INT128_SUPPORTED, reason="by-value int128 needs x86-64")
def test_context_int128(fam, item):
    with fam.context() as ctx:
        v = ctx.bind(item)
        x = -(1 << 120) + 3
        v.set(32, x, "int128")
        assert v.fetch(32, "int128") == x
        # The ctx compare-swap is the one whose argument order differs from C.
        assert v.compare_swap(32, x, 77, "int128") == x
        assert item.fetch(32, "int128") == 77
        assert v.compare_swap(32, 0, 1, "int128") == 77
        assert item.fetch(32, "int128") == 77


def test_view_has_no_life_cycle(fam, item):
    with fam.context() as ctx:
        v = ctx.bind(item)
        with pytest.raises(openfam.InvalidOperation):
            v.close()
        with pytest.raises(openfam.InvalidOperation):
            v.deallocate()
        with pytest.raises(openfam.InvalidOperation):
            v.map()
    assert not item.closed


def test_closed_context_rejected(fam, item):
    ctx = fam.context()
    v = ctx.bind(item)
    ctx.close()
    with pytest.raises(openfam.InvalidArgument):
        v.put(b"x")
    with pytest.raises(openfam.InvalidArgument):
        ctx.bind(item).put(b"x")
