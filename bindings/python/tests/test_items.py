"""DataItem: data path, buffer gate, mapping, life cycle, repr."""

import array
import mmap

import numpy as np
import pytest

import openfam
from conftest import unique


def test_put_get_bytes(item):
    item.put(b"hello", 10)
    assert item.get(5, 10) == b"hello"
    assert item.get(3) == b"\0\0\0"
    assert len(item.get()) == item.size == 4096
    assert item.get(offset=4090) == b"\0" * 6


@pytest.mark.parametrize(
    "make",
    [
        lambda: bytearray(b"abcdefgh"),
        lambda: memoryview(b"abcdefgh"),
        lambda: memoryview(bytearray(b"abcdefgh")),
        lambda: array.array("B", b"abcdefgh"),
        lambda: np.frombuffer(b"abcdefgh", dtype=np.uint8),  # read-only array
    ],
)
def test_put_accepts_buffer_types(item, make):
    item.put(make(), 8)
    assert item.get(8, 8) == b"abcdefgh"


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.float32, np.float64, np.complex128])
def test_numpy_round_trip(item, dtype):
    src = (np.arange(64) * 3).astype(dtype)
    item.put(src, 128)
    out = np.zeros_like(src)
    assert item.get_into(out, 128) is out
    np.testing.assert_array_equal(out, src)


def test_2d_array_and_typed_memoryview(item):
    src = np.arange(12, dtype=np.int32).reshape(3, 4)
    item.put(src)
    out = np.empty((3, 4), dtype=np.int32)
    item.get_into(out)
    np.testing.assert_array_equal(out, src)
    mv = memoryview(bytearray(48)).cast("i")
    item.get_into(mv)
    assert list(mv) == list(range(12))


def test_get_into_is_zero_copy_into_slices(item):
    item.put(np.arange(8, dtype=np.uint8))
    big = np.zeros(16, dtype=np.uint8)
    item.get_into(big[4:12])
    assert big.tolist() == [0] * 4 + list(range(8)) + [0] * 4


def test_cached_array_sees_changes_each_call(item):
    a = np.zeros(4, dtype=np.int64)
    item.put(np.array([1, 2, 3, 4], dtype=np.int64))
    item.get_into(a)
    item.put(np.array([5, 6, 7, 8], dtype=np.int64))
    item.get_into(a)
    assert a.tolist() == [5, 6, 7, 8]
    b = np.zeros(2, dtype=np.int64)
    item.get_into(b, 8)
    assert b.tolist() == [6, 7]


def test_buffer_gate_rejections(item):
    with pytest.raises(openfam.InvalidArgument, match="C-contiguous"):
        item.get_into(np.zeros(16, dtype=np.uint8)[::2])
    with pytest.raises(openfam.InvalidArgument, match="C-contiguous"):
        item.put(np.zeros((4, 4), dtype=np.uint8).T)
    with pytest.raises(TypeError, match="read-only"):
        item.get_into(b"immutable")
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        item.get_into(ro)
    with pytest.raises(TypeError, match="buffer protocol"):
        item.put("a str")
    with pytest.raises(TypeError, match="buffer protocol"):
        item.get_into([1, 2, 3])


def test_out_of_range(item):
    with pytest.raises(openfam.OutOfRange) as ei:
        item.put(b"xx", 4095)
    assert ei.value.code == 13
    with pytest.raises(openfam.OutOfRange):
        item.get_into(bytearray(8), 4092)
    with pytest.raises(openfam.OutOfRange):
        item.get(1, 4096)


def test_zero_length_transfers_rejected_as_in_c(item):
    for call in (lambda: item.put(b""), lambda: item.get(0), lambda: item.get_into(bytearray())):
        with pytest.raises(openfam.InvalidArgument, match="size"):
            call()


def test_nonblocking_put_get_quiet(fam, item):
    src = np.arange(512, dtype=np.float64)
    item.put(src, blocking=False)
    fam.quiet()
    out = np.zeros(512)
    item.get_into(out, blocking=False)
    fam.quiet()
    np.testing.assert_array_equal(out, src)
    assert fam.progress() == 0


def test_nonblocking_keeps_buffer_alive(fam, item):
    item.put(bytearray(b"q" * 64), blocking=False)  # no other reference
    fam.quiet()
    assert item.get(64) == b"q" * 64


def test_nonblocking_pins_bytearray_until_quiet(fam, item):
    buf = bytearray(32)
    item.get_into(buf, blocking=False)
    with pytest.raises(BufferError):
        buf.extend(b"x")  # resizing memory the library may still write
    fam.quiet()
    buf.extend(b"x")


def test_lookup_named_and_from_global(fam, region):
    it = region.allocate(256, "named-item", 0o640)
    it.put(b"shared")
    found = fam.lookup("named-item", region.name)
    assert found.get(6) == b"shared"
    assert found.name == "named-item"
    st = found.stat()
    assert st.size == 256 and st.mode == 0o640 and st.name == "named-item"
    g = it.global_descriptor
    assert isinstance(g, openfam.GlobalDescriptor)
    by_g = openfam.DataItem.from_global(fam, tuple(g))
    assert by_g.get(6) == b"shared"
    with pytest.raises(openfam.NotFound):
        fam.lookup("nope", region.name)
    with pytest.raises(openfam.AlreadyExists):
        region.allocate(16, "named-item")


def test_unnamed_item(fam, region):
    it = region.allocate(64)
    assert it.name == "" and it.stat().name == ""
    it.put(b"anon")
    other = openfam.DataItem.from_global(fam, it.global_descriptor)
    assert other.get(4) == b"anon"
    assert other.name == ""
    assert "(unnamed)" in repr(other)


def test_chmod_item(fam, item):
    # As in OpenFAM, an item of a region-level region takes the region's mode.
    with pytest.raises(openfam.PermissionDenied):
        item.chmod(0o644)
    r = fam.create_region(unique("ri"), 1 << 20, item_permissions=True)
    try:
        it = r.allocate(64, "own")
        it.chmod(0o644)
        assert it.stat().mode == 0o644
        # The owner is bound by no mode bits, as in OpenFAM.
        it.put(b"kept")
        it.chmod(0o333)
        assert it.get(4) == b"kept"
        it.chmod(0)
        it.put(b"also")
        assert it.get(4) == b"also"
    finally:
        r.destroy()


def test_owner_ignores_region_mode(fam):
    # As in OpenFAM: the owner allocates in its own read-only region and
    # destroys it after changing its mode to 0.
    r = fam.create_region(unique("ro"), 1 << 20, mode=0o444)
    it = r.allocate(64, "x")
    it.put(b"mine")
    assert it.get(4) == b"mine"
    r.chmod(0)
    assert fam.lookup_region(r.name).stat().mode == 0
    r.destroy()
    with pytest.raises(openfam.NotFound):
        fam.lookup_region(r.name)


def test_deallocate_and_close(fam, region):
    it = region.allocate(64, "gone")
    it.deallocate()
    assert it.closed
    with pytest.raises(openfam.NotFound):
        fam.lookup("gone", region.name)
    with pytest.raises(openfam.InvalidArgument):
        it.get(1)
    keep = region.allocate(64, "kept")
    with keep:
        keep.put(b"k")
    assert keep.closed and "(closed)" in repr(keep)
    keep.close()  # idempotent
    assert fam.lookup("kept", region.name).get(1) == b"k"


def test_allocate_errors(region):
    with pytest.raises(openfam.NoSpace) as ei:
        region.allocate(64 << 20)
    assert ei.value.code == 14
    with pytest.raises(openfam.NameTooLong):
        region.allocate(8, "x" * (openfam.NAME_MAX + 1))


def test_map_and_as_array_zero_copy(item):
    mv = item.map()
    assert isinstance(mv, memoryview) and len(mv) == 4096 and not mv.readonly
    assert item.map() is mv
    arr = item.as_array(np.int64)
    assert arr.shape == (512,)
    arr[3] = 42  # a store into FAM
    assert int(np.frombuffer(item.get(8, 24), np.int64)[0]) == 42
    item.put(np.array([7], dtype=np.int64), 0)
    assert arr[0] == 7  # a put is visible through the mapping
    grid = item.as_array(np.float32, (4, 8), offset=64)
    grid[:] = 1.5
    assert np.frombuffer(item.get(128, 64), np.float32).tolist() == [1.5] * 32
    with pytest.raises(openfam.InvalidArgument):
        item.as_array(np.float64, (1024,))
    assert "mapped" in repr(item)
    with pytest.raises(BufferError, match="delete them"):
        item.unmap()
    del arr, grid
    item.unmap()
    with pytest.raises(ValueError):
        mv[0]  # a released view refuses access instead of touching freed memory
    assert item.as_array(np.uint8)[24] == 42  # maps again


def test_close_refuses_while_arrays_exist(item):
    a = item.as_array(np.uint8)
    with pytest.raises(BufferError):
        item.close()
    assert not item.closed
    del a
    item.close()
    assert item.closed


def test_mmap_buffer_accepted(item):
    m = mmap.mmap(-1, 4096)
    m[:5] = b"mmapd"
    item.put(m)
    out = mmap.mmap(-1, 16)
    item.get_into(out)
    assert out[:5] == b"mmapd"


def test_repr_and_html(item):
    r = repr(item)
    assert r.startswith("<openfam.DataItem %r 4 KiB, mode 0o600, " % item.name)
    assert "region %d offset 0x0" % item.global_descriptor.region_id in r
    h = item._repr_html_()
    assert "<table>" in h and item.name in h and "global descriptor" in h

