"""Every atomic, every dtype, against a numpy model; threads; int128."""

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import openfam
from openfam import _capi

INT_TYPES = [np.int32, np.int64, np.uint32, np.uint64]
ALL_TYPES = INT_TYPES + [np.float32, np.float64]


@pytest.fixture
def word(region):
    return region.allocate(64)


def model_op(op, old, v, dt):
    """The value numpy computes for op, with the dtype's wrap-around."""
    a = np.array([old], dtype=dt)
    b = np.array([v], dtype=dt)
    with np.errstate(over="ignore"):
        return {
            "add": a + b,
            "subtract": a - b,
            "min": np.minimum(a, b),
            "max": np.maximum(a, b),
            "and": a & b if dt.kind == "u" else None,
            "or": a | b if dt.kind == "u" else None,
            "xor": a ^ b if dt.kind == "u" else None,
            "swap": b,
        }[op][0]


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=lambda t: np.dtype(t).name)
def test_every_operation(word, dtype):
    dt = np.dtype(dtype)
    one = dt.type(5)
    word.set(8, 20, dt)
    assert word.fetch(8, dt) == 20 and type(word.fetch(8, dt)) is dt.type
    ops = ["add", "subtract", "min", "max"] + (["and", "or", "xor"] if dt.kind == "u" else [])
    cur = dt.type(20)
    for op in ops:
        meth = getattr(word, op + "_" if op in ("and", "or") else op)
        meth(8, one, dt)
        cur = model_op(op, cur, one, dt)
        assert word.fetch(8, dt) == cur, op
        old = getattr(word, "fetch_" + op)(8, 3, dt)
        assert old == cur, op
        cur = model_op(op, cur, 3, dt)
        assert word.fetch(8, dt) == cur, op
    assert word.swap(8, 11, dt) == cur
    assert word.fetch(8, dt) == 11
    # Neighbouring bytes are untouched.
    assert word.get(8, 0) == b"\0" * 8 and word.get(8, 16) == b"\0" * 8


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: np.dtype(t).name)
def test_compare_swap(word, dtype):
    dt = np.dtype(dtype)
    word.set(0, 7, dt)
    assert word.compare_swap(0, 7, 9, dt) == 7  # swapped
    assert word.compare_swap(0, 7, 1, dt) == 9  # not swapped
    assert word.fetch(0, dt) == 9


def test_dtype_spellings(word):
    word.set(0, 1, "i4")
    word.add(0, 2, "int32")
    assert word.fetch(0, np.dtype("<i4")) == 3
    assert word.fetch_add(0, 1) == 3  # int64 is the default
    word.add(0, 0.5, np.float64)
    assert word.fetch(0, float) == np.frombuffer(word.get(8), np.float64)[0]


def test_dtype_and_value_errors(word):
    with pytest.raises(openfam.InvalidArgument, match="atomics support"):
        word.add(0, 1, np.int8)
    with pytest.raises(openfam.InvalidArgument, match="atomics support"):
        word.add(0, 1, ">i8")
    with pytest.raises(openfam.InvalidArgument, match="uint32 or uint64"):
        word.and_(0, 1, np.int64)
    with pytest.raises(openfam.InvalidArgument, match="uint32 or uint64"):
        word.fetch_xor(0, 1, np.int32)
    with pytest.raises(openfam.InvalidArgument, match="integer type"):
        word.compare_swap(0, 1.0, 2.0, np.float64)
    with pytest.raises(openfam.InvalidArgument, match="no int128 form"):
        word.fetch_add(0, 1, "int128")
    with pytest.raises(OverflowError):
        word.set(0, 2**32, np.uint32)
    with pytest.raises(OverflowError):
        word.set(0, -1, np.uint64)
    with pytest.raises(TypeError):
        word.add(0, 1.5, np.int64)
    with pytest.raises(openfam.InvalidArgument):
        word.fetch_add(4, 1, np.int64)  # misaligned
    with pytest.raises(openfam.OutOfRange):
        word.fetch_add(64, 1, np.int64)


@pytest.mark.skipif(not _capi.INT128_SUPPORTED, reason="by-value int128 needs x86-64")
def test_int128(word):
    big = (1 << 100) + 12345
    word.set(16, big, "int128")
    assert word.fetch(16, "int128") == big
    raw = word.get(16, 16)
    assert int.from_bytes(raw, "little", signed=True) == big
    assert word.compare_swap(16, big, -5, "int128") == big
    assert word.fetch(16, "int128") == -5
    assert word.compare_swap(16, 0, 1, "int128") == -5
    assert word.fetch(16, "int128") == -5
    with pytest.raises(OverflowError):
        word.set(16, 1 << 127, "int128")


def test_int128_fetch_everywhere(word):
    word.put((-(2**90)).to_bytes(16, "little", signed=True), 32)
    assert word.fetch(32, "int128") == -(2**90)


def test_eight_threads_fetch_add_exact_total(word):
    n_threads, per_thread = 8, 2000
    seen = []

    def work():
        local = []
        for _ in range(per_thread):
            local.append(int(word.fetch_add(0, 1, np.uint64)))
        seen.extend(local)

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert int(word.fetch(0, np.uint64)) == n_threads * per_thread
    # Every fetch_add saw a distinct previous value: none was lost.
    assert sorted(seen) == list(range(n_threads * per_thread))


OPS = ["set", "add", "subtract", "min", "max", "and", "or", "xor", "swap", "cas"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dtype=st.sampled_from(INT_TYPES + [np.float64]),
    steps=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 7), st.integers(-(2**70), 2**70)), max_size=20),
)
def test_atomics_match_numpy_model(word, dtype, steps):
    dt = np.dtype(dtype)
    n = 64 // dt.itemsize
    word.put(bytes(64))
    model = np.zeros(n, dtype=dt)
    info = np.iinfo(dt) if dt.kind in "iu" else None
    for op, slot, raw in steps:
        slot %= n
        off = slot * dt.itemsize
        v = dt.type(float(raw % 1000)) if info is None else dt.type(int(raw) % (int(info.max) - int(info.min) + 1) + int(info.min))
        if op in ("and", "or", "xor") and dt.kind != "u":
            continue
        if op == "cas":
            if info is None:
                continue
            expected = model[slot] if raw % 2 else v
            old = word.compare_swap(off, expected, v, dt)
            assert old == model[slot]
            if model[slot] == expected:
                model[slot] = v
            continue
        if op == "set":
            word.set(off, v, dt)
            model[slot] = v
            continue
        old = getattr(word, "fetch_" + op if op != "swap" else "swap")(off, v, dt)
        assert old == model[slot]
        model[slot] = model_op(op, model[slot], v, dt)
    np.testing.assert_array_equal(np.frombuffer(word.get(), dt), model)
