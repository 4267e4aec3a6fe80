"""Listing: Fam.regions() and Region.items(), in process and through famd."""

import json
import os
import subprocess
import sys

import pytest

import openfam

from conftest import FAMRUN, needs_famrun, run_python, unique


def test_regions_lists_what_stat_says(fam):
    a = fam.create_region(unique("la"), 1 << 20, 0o640)
    # The owner sees its own region whatever its mode.
    b = fam.create_region(unique("lb"), 2 << 20, 0o000)
    try:
        listed = {r.name: r for r in fam.regions()}
        for reg in (a, b):
            st = reg.stat()
            assert listed[reg.name] == openfam.RegionInfo(reg.name, st.size, st.mode, st.uid, st.gid)
        assert listed[b.name].mode == 0
        assert all(isinstance(r, openfam.RegionInfo) for r in listed.values())
    finally:
        a.destroy()
    names = [r.name for r in fam.regions()]
    assert a.name not in names and b.name in names
    b.destroy()
    assert b.name not in [r.name for r in fam.regions()]


def test_names_with_spaces_and_utf8(fam):
    # Only control characters (tab and newline among them) are refused in a
    # name, so the library's tab-separated lines always split cleanly.
    name = unique("r \u00e9\u4e16 x")
    r = fam.create_region(name, 1 << 16)
    try:
        r.allocate(64, "item with \u00fc spaces")
        assert name in [x.name for x in fam.regions()]
        assert [i.name for i in r.items()] == ["item with \u00fc spaces"]
    finally:
        r.destroy()
    for bad in ("a\tb", "a\nb"):
        with pytest.raises(openfam.InvalidArgument):
            fam.create_region(bad, 1 << 16)


def test_items_by_offset_with_unnamed(fam, region):
    assert region.items() == []
    named = region.allocate(1000, "first", 0o640)
    unnamed = region.allocate(4096)
    got = region.items()
    assert all(isinstance(i, openfam.ItemInfo) for i in got)
    want = []
    for d in (named, unnamed):
        st = d.stat()
        want.append(openfam.ItemInfo(st.name, d.global_descriptor.offset, st.size, st.mode, st.uid, st.gid))
    assert got == sorted(want, key=lambda i: i.offset)
    assert {i.name for i in got} == {"first", ""}
    named.deallocate()
    assert [i.name for i in region.items()] == [""]


def test_items_of_dataitem_level_region_show_item_modes(fam):
    r = fam.create_region(unique("dl"), 1 << 20, item_permissions=True)
    try:
        r.allocate(64, "ro", 0o444)
        r.allocate(64, "rw", 0o660)
        assert {(i.name, i.mode) for i in r.items()} == {("ro", 0o444), ("rw", 0o660)}
    finally:
        r.destroy()


def test_items_of_released_region(fam):
    r = fam.create_region(unique("gone"), 1 << 16)
    r.destroy()
    with pytest.raises(openfam.InvalidArgument):
        r.items()


LIST_SCRIPT = r"""
import json, os, sys
import openfam
prefix = sys.argv[1]
with openfam.Fam() as fam:
    a = fam.create_region(prefix + "-a", 1 << 20, 0o640)
    b = fam.create_region(prefix + "-b", 1 << 20, 0o600)
    a.allocate(100, "x")
    a.allocate(200)
    b.allocate(300, "y", 0o644)
    out = {
        "server": bool(os.environ.get("OPENFAM_SERVER")),
        "regions": [list(r) for r in fam.regions() if r.name.startswith(prefix)],
        "a": [list(i) for i in a.items()],
        "b": [list(i) for i in b.items()],
        "uid": os.getuid(), "gid": os.getgid(),
    }
    a.destroy()
    b.destroy()
    out["after"] = [r.name for r in fam.regions() if r.name.startswith(prefix)]
    print("RESULT " + json.dumps(out))
"""


def _check_listing(stdout, prefix):
    line = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
    assert line, stdout
    out = json.loads(line[0][len("RESULT "):])
    uid, gid = out["uid"], out["gid"]
    assert out["regions"] == [[prefix + "-a", 1 << 20, 0o640, uid, gid], [prefix + "-b", 1 << 20, 0o600, uid, gid]]
    assert [(i[0], i[2], i[3]) for i in out["a"]] == [("x", 100, 0o600), ("", 200, 0o600)]
    assert out["a"][0][1] < out["a"][1][1]
    assert [(i[0], i[2], i[3], i[4], i[5]) for i in out["b"]] == [("y", 300, 0o644, uid, gid)]
    assert out["after"] == []
    return out


def test_listing_in_process(private_store):
    prefix = unique("lp")
    r = run_python(LIST_SCRIPT, private_store, args=[prefix])
    assert r.returncode == 0, r.stderr
    assert not _check_listing(r.stdout, prefix)["server"]


@needs_famrun
def test_listing_through_famd(private_store):
    # famrun starts a famd for the job, so every listing is served by famd's
    # ListRegions and ListItems.
    prefix = unique("lf")
    env = dict(os.environ, **private_store)
    env.pop("OPENFAM_SERVER", None)
    r = subprocess.run(
        [str(FAMRUN), "-n", "1", sys.executable, "-c", LIST_SCRIPT, prefix],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert _check_listing(r.stdout, prefix)["server"]
