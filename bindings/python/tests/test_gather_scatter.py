"""Strided and indexed gather/scatter, checked against a numpy model."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import openfam

N_ELEMS = 256  # elements of 8 bytes in the 2 KiB item used below


@pytest.fixture
def words(region):
    it = region.allocate(N_ELEMS * 8)
    it.put(np.arange(N_ELEMS, dtype=np.int64))
    return it


def test_strided_gather(words):
    got = words.gather(range(3, 60, 7), np.int64)
    np.testing.assert_array_equal(got, np.arange(3, 60, 7))
    got = words.gather(slice(10, 20), np.int64)
    np.testing.assert_array_equal(got, np.arange(10, 20))


def test_indexed_gather_into_out(words):
    out = np.zeros(4, dtype=np.int64)
    assert words.gather([5, 0, 255, 5], out=out) is out
    assert out.tolist() == [5, 0, 255, 5]
    got = words.gather(np.array([9, 1], dtype=np.int32), np.int64)
    assert got.tolist() == [9, 1]


def test_scatter_strided_and_indexed(words):
    words.scatter(np.array([-1, -2, -3], dtype=np.int64), range(0, 9, 4))
    words.scatter(np.array([100, 200], dtype=np.int64), [255, 1])
    model = np.arange(N_ELEMS, dtype=np.int64)
    model[[0, 4, 8]] = [-1, -2, -3]
    model[[255, 1]] = [100, 200]
    np.testing.assert_array_equal(np.frombuffer(words.get(), np.int64), model)


def test_scatter_bytes_with_dtype(words):
    words.scatter(np.array([7, 8], dtype=np.int64).tobytes(), [2, 3], dtype=np.int64)
    assert words.gather([2, 3], np.int64).tolist() == [7, 8]


def test_nonblocking_gather_scatter(fam, words):
    words.scatter(np.full(16, 9, dtype=np.int64), range(16), blocking=False)
    fam.quiet()
    out = words.gather(range(0, 32, 2), np.int64, blocking=False)
    fam.quiet()
    assert out.tolist() == [9] * 8 + list(range(16, 32, 2))


def test_gather_errors(words):
    with pytest.raises(openfam.OutOfRange):
        words.gather([N_ELEMS], np.int64)
    with pytest.raises(openfam.OutOfRange):
        words.gather(range(0, N_ELEMS * 2, 2), np.int64)
    with pytest.raises(openfam.InvalidArgument, match="non-negative"):
        words.gather([-1], np.int64)
    with pytest.raises(openfam.InvalidArgument, match="integers"):
        words.gather([1.5], np.int64)
    with pytest.raises(openfam.InvalidArgument, match="step >= 1"):
        words.gather(range(10, 0, -1), np.int64)
    with pytest.raises(openfam.InvalidArgument, match="need"):
        words.gather([1, 2], out=np.zeros(3, dtype=np.int64))
    with pytest.raises(openfam.InvalidArgument, match="need"):
        words.scatter(np.zeros(3, dtype=np.int64), [1, 2])
    with pytest.raises(openfam.InvalidArgument, match="stop"):
        words.gather(slice(1, None), np.int64)


DTYPES = [np.uint8, np.int16, np.int32, np.float64]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dtype=st.sampled_from(DTYPES),
    ops=st.lists(
        st.tuples(
            st.booleans(),  # scatter (True) or gather
            st.one_of(
                st.tuples(st.integers(0, 40), st.integers(1, 9), st.integers(0, 12)),
                st.lists(st.integers(0, 127), min_size=0, max_size=12),
            ),
            st.integers(0, 2**31),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_matches_numpy_model(region, dtype, ops):
    dt = np.dtype(dtype)
    n = 128
    it = region.allocate(n * dt.itemsize)
    try:
        rng = np.random.default_rng(0)
        model = rng.integers(0, 100, n).astype(dt)
        it.put(model)
        for is_scatter, where, seed in ops:
            if isinstance(where, tuple):
                first, stride, count = where
                idx = np.arange(first, first + stride * count, stride, dtype=np.int64)
                index = range(first, first + stride * count, stride)
            else:
                idx = np.array(where, dtype=np.int64)
                index = idx
            if idx.size == 0:
                # Zero elements are an invalid argument in C; so here.
                with pytest.raises(openfam.InvalidArgument):
                    it.gather(index, dt)
                continue
            in_range = int(idx.max()) < n
            if is_scatter:
                vals = np.random.default_rng(seed).integers(0, 100, idx.size).astype(dt)
                if not in_range:
                    with pytest.raises(openfam.OutOfRange):
                        it.scatter(vals, index)
                    continue
                it.scatter(vals, index)
                model[idx] = vals  # later duplicates win, as in the library's order
            else:
                if not in_range:
                    with pytest.raises(openfam.OutOfRange):
                        it.gather(index, dt)
                    continue
                np.testing.assert_array_equal(it.gather(index, dt), model[idx])
        np.testing.assert_array_equal(np.frombuffer(it.get(), dt), model)
    finally:
        it.deallocate()
