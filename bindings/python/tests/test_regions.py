"""Region: create, lookup, stat, resize, chmod, destroy, errors, repr."""

import pytest

import openfam

from conftest import unique


def test_create_lookup_stat_destroy(fam):
    name = unique("r")
    r = fam.create_region(name, 1 << 20, 0o640)
    assert r.name == name
    st = r.stat()
    assert st.size == r.size == 1 << 20
    assert st.mode == 0o640
    assert st.name == name
    assert st.memory_type == "volatile" and not st.persistent
    again = fam.lookup_region(name)
    assert again.global_descriptor == r.global_descriptor
    assert r.global_descriptor.offset == 2**64 - 1
    r.destroy()
    with pytest.raises(openfam.NotFound):
        fam.lookup_region(name)


def test_persistent_and_interleave_attributes(fam):
    r = fam.create_region(unique("p"), 1 << 16, persistent=True, interleave=False)
    try:
        st = r.stat()
        assert st.memory_type == "persistent" and st.persistent
        assert st.interleave in (False, None)
    finally:
        r.destroy()


def test_resize_grows(region):
    region.resize(2 << 20)
    assert region.size == 2 << 20


def test_chmod(region):
    region.chmod(0o644)
    assert region.stat().mode == 0o644


def test_errors(fam, region):
    with pytest.raises(openfam.AlreadyExists) as ei:
        fam.create_region(region.name, 1 << 16)
    assert ei.value.code == 9
    with pytest.raises(openfam.NameTooLong) as ei:
        fam.create_region("n" * (openfam.NAME_MAX + 1), 1 << 16)
    assert ei.value.code == 23
    with pytest.raises(openfam.NotFound) as ei:
        fam.lookup_region(unique("missing"))
    assert ei.value.code == 8
    with pytest.raises(openfam.InvalidArgument):
        fam.create_region(unique("z"), 0)


def test_region_lookup_item(region):
    it = region.allocate(128, "named")
    assert region.lookup("named").global_descriptor == it.global_descriptor


def test_destroyed_region_handle_rejected(fam):
    r = fam.create_region(unique("r"), 1 << 16)
    r.destroy()
    assert "(released)" in repr(r)
    with pytest.raises(openfam.InvalidArgument):
        r.stat()


def test_repr_and_html(region):
    text = repr(region)
    assert text.startswith("<openfam.Region %r 1 MiB volatile" % region.name)
    html = region._repr_html_()
    assert "<table>" in html and region.name in html and "volatile" in html


@pytest.mark.parametrize("mode", [0o1777, 0o4600, 0o100600, 0xFFFFFFFF])
def test_mode_bits_outside_0777_are_refused(fam, region, mode):
    # The binding passes the mode through; the library refuses it and
    # names the value, and nothing is created or changed.
    name = unique("m")
    with pytest.raises(openfam.InvalidArgument) as ei:
        fam.create_region(name, 1 << 16, mode)
    assert ei.value.code == 4 and oct(mode)[2:] in ei.value.message
    with pytest.raises(openfam.NotFound):
        fam.lookup_region(name)
    with pytest.raises(openfam.InvalidArgument):
        region.allocate(64, unique("i"), mode)
    with pytest.raises(openfam.InvalidArgument):
        region.chmod(mode)
    item = region.allocate(64, unique("i"), 0o640)
    with pytest.raises(openfam.InvalidArgument):
        item.chmod(mode)
    assert item.stat().mode == 0o640


@pytest.mark.parametrize("mode", [-1, 2**32 + 0o600])
def test_modes_mode_t_cannot_hold_are_refused(fam, mode):
    # ctypes would keep the low 32 bits: 2**32 + 0o600 must not become 0o600.
    name = unique("m")
    with pytest.raises(openfam.InvalidArgument) as ei:
        fam.create_region(name, 1 << 16, mode)
    assert str(mode) in ei.value.message
    with pytest.raises(openfam.NotFound):
        fam.lookup_region(name)


@pytest.mark.parametrize("name", ["..", ".", "a/b", "tab\there", "del\x7f"])
def test_path_like_names_are_refused(fam, name):
    with pytest.raises(openfam.InvalidArgument) as ei:
        fam.create_region(name, 1 << 16)
    assert ei.value.code == 4
