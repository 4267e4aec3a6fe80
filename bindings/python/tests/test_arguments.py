"""Sizes, offsets and modes: only integers in range reach the library.

Each wrong value raises TypeError (not an integer) or InvalidArgument (an
integer the C parameter cannot hold) naming the value, and nothing is
created or changed.
"""

import numpy as np
import pytest

import openfam
from conftest import unique

# Values that are not integers, each of which a conversion would silently
# turn into some other number: "0644" read as decimal 644 (0o1204), 420.0
# truncated, True taken as 1.
NOT_INTEGERS = ["0644", "420", 420.0, 1.5, True, None, np.float64(420.0), b"\x01"]


def _named(excinfo, value):
    text = str(excinfo.value)
    assert repr(value) in text or str(value) in text, text


@pytest.mark.parametrize("mode", NOT_INTEGERS)
def test_non_integer_mode_is_a_type_error(fam, region, mode):
    name = unique("m")
    with pytest.raises(TypeError) as ei:
        fam.create_region(name, 1 << 16, mode)
    _named(ei, mode)
    with pytest.raises(openfam.NotFound):
        fam.lookup_region(name)
    with pytest.raises(TypeError) as ei:
        region.allocate(64, name, mode)
    _named(ei, mode)
    with pytest.raises(openfam.NotFound):
        region.lookup(name)
    region.chmod(0o640)
    with pytest.raises(TypeError) as ei:
        region.chmod(mode)
    _named(ei, mode)
    assert region.stat().mode == 0o640


def test_octal_string_mode_keeps_the_owner_s_read_bit(region):
    # The reported defect: chmod("0644") set 0o1204 & 0o777 = 0o204.
    region.chmod(0o644)
    with pytest.raises(TypeError, match=r"mode must be an int such as 0o644, not str '0644'"):
        region.chmod("0644")
    assert region.stat().mode == 0o644


def test_item_chmod_checks_its_mode(fam):
    r = fam.create_region(unique("r"), 1 << 16, item_permissions=True)
    try:
        it = r.allocate(64, unique("i"), 0o640)
        for bad in ("0600", 384.0, False):
            with pytest.raises(TypeError):
                it.chmod(bad)
        with pytest.raises(openfam.InvalidArgument, match="-1"):
            it.chmod(-1)
        assert it.stat().mode == 0o640
    finally:
        r.destroy()


@pytest.mark.parametrize("size", [-1, -(1 << 20), 1 << 64, 1 << 70])
def test_region_size_out_of_range_is_invalid_argument(fam, size):
    # -1 used to wrap to 2**64 - 1 and come back as NoSpace "exceeds the
    # 64 TiB limit"; 2**64 used to be a ctypes ArgumentError.
    name = unique("z")
    with pytest.raises(openfam.InvalidArgument) as ei:
        fam.create_region(name, size)
    assert ei.value.code == 4 and "size %d" % size in ei.value.message
    with pytest.raises(openfam.NotFound):
        fam.lookup_region(name)


@pytest.mark.parametrize("size", [65536.0, 1e6, "65536", True, None])
def test_region_size_not_an_integer_is_a_type_error(fam, size):
    name = unique("z")
    with pytest.raises(TypeError) as ei:
        fam.create_region(name, size)
    _named(ei, size)
    assert "size must be an int" in str(ei.value)
    with pytest.raises(openfam.NotFound):
        fam.lookup_region(name)


def test_numpy_integers_are_integers(fam):
    r = fam.create_region(unique("n"), np.int64(1 << 16), np.uint16(0o640))
    try:
        assert r.stat().mode == 0o640 and r.size == 1 << 16
        it = r.allocate(np.uint32(64), unique("i"), np.int32(0o600))
        it.put(b"abcd", np.int64(8))
        assert it.get(np.int8(4), np.uint64(8)) == b"abcd"
        it.set(np.int64(16), 5)
        assert it.fetch(np.uint8(16)) == 5
        r.resize(np.int64(1 << 17))
        assert r.size == 1 << 17
    finally:
        r.destroy()


@pytest.mark.parametrize("size,exc", [(-1, openfam.InvalidArgument), (1 << 64, openfam.InvalidArgument),
                                      (64.0, TypeError), ("64", TypeError), (True, TypeError)])
def test_allocate_size_is_checked(region, size, exc):
    name = unique("i")
    with pytest.raises(exc) as ei:
        region.allocate(size, name)
    _named(ei, size)
    with pytest.raises(openfam.NotFound):
        region.lookup(name)


@pytest.mark.parametrize("size,exc", [(-1, openfam.InvalidArgument), (1 << 64, openfam.InvalidArgument),
                                      (float(2 << 20), TypeError), ("2097152", TypeError)])
def test_resize_size_is_checked(region, size, exc):
    before = region.size
    with pytest.raises(exc) as ei:
        region.resize(size)
    _named(ei, size)
    assert region.size == before


@pytest.mark.parametrize("offset,exc", [(-8, openfam.InvalidArgument), (1 << 64, openfam.InvalidArgument),
                                        (8.0, TypeError), ("8", TypeError), (True, TypeError)])
def test_data_path_offsets_are_checked(item, offset, exc):
    item.put(b"\x07" * 16, 0)
    buf = np.zeros(2, dtype=np.int64)
    calls = [
        lambda: item.get_into(buf, offset),
        lambda: item.get_into(buf, offset, blocking=False),
        lambda: item.put(b"\xff" * 8, offset),
        lambda: item.put(b"\xff" * 8, offset, blocking=False),
        lambda: item.get(8, offset),
        lambda: item.set(offset, 1),
        lambda: item.fetch(offset),
        lambda: item.fetch_add(offset, 1),
        lambda: item.compare_swap(offset, 0, 1),
        lambda: item.fetch(offset, "int128"),
        lambda: item.as_array(np.uint8, offset=offset),
    ]
    for call in calls:
        with pytest.raises(exc) as ei:
            call()
        _named(ei, offset)
    item._fam.quiet()
    assert item.get(16, 0) == b"\x07" * 16


def test_get_size_is_checked(item):
    with pytest.raises(openfam.InvalidArgument, match="nbytes -1"):
        item.get(-1)
    with pytest.raises(TypeError, match="nbytes"):
        item.get(8.0)


def test_from_global_checks_its_fields(fam, item):
    g = item.global_descriptor
    with pytest.raises(openfam.InvalidArgument, match="offset -1"):
        openfam.DataItem.from_global(fam, (g.region_id, -1))
    with pytest.raises(TypeError, match="region_id"):
        openfam.DataItem.from_global(fam, (float(g.region_id), g.offset))
