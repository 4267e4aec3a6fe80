"""Fam: initialize/finalize, runtime queries, options."""

import os

import pytest

import openfam

from conftest import run_python, unique


def test_alone_is_pe_zero_of_one(fam):
    assert fam.active
    assert fam.pe_id == 0
    assert fam.pe_count == 1
    assert fam.option("PE_ID") == 0
    assert fam.option("PE_COUNT") == 1
    fam.barrier()
    fam.fence()
    fam.quiet()
    assert fam.progress() == 0
    assert "pe 0 of 1" in repr(fam)


def test_options_lists_values(fam):
    opts = fam.options()
    assert opts["PE_ID"] == 0 and opts["PE_COUNT"] == 1
    assert all(isinstance(k, str) for k in opts)


def test_unknown_option_rejected(fam):
    with pytest.raises(openfam.InvalidArgument):
        fam.option("NO_SUCH_OPTION")
    with pytest.raises(openfam.InvalidArgument):
        openfam.Fam(options={"bogus": "1"})


def test_second_initialize_fails(fam):
    with pytest.raises(openfam.FamError):
        openfam.Fam().__enter__()
    assert fam.active


def test_finalize_then_initialize_again(fam):
    r = fam.create_region(unique("r"), 1 << 16)
    it = r.allocate(64, "x")
    ctx = fam.context()
    fam.finalize()
    assert not fam.active and it.closed
    assert "not initialized" in repr(fam)
    fam.initialize()
    assert fam.active
    # Handles from before finalize are released, not crashes.
    with pytest.raises(openfam.InvalidArgument):
        it.put(b"x")
    with pytest.raises(openfam.InvalidArgument):
        r.stat()
    with pytest.raises(openfam.InvalidArgument):
        ctx.quiet()
    # The region itself survived (volatile regions live for the store's life
    # in this process) or is gone: either way a fresh lookup is consistent.
    try:
        again = fam.lookup_region(r.name)
    except openfam.NotFound:
        return
    again.destroy()


def test_group_must_be_str():
    with pytest.raises(TypeError):
        openfam.Fam(group=3).initialize()  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["finalize", "destroy", "with-block"])
def test_array_outliving_its_memory_never_crashes(private_store, how):
    # A numpy view from as_array() that outlives fam.finalize(), the
    # region's destroy() or the end of a `with openfam.Fam()` block used to
    # kill the interpreter (exit 139) on its next read: the mapping under
    # it was unmapped. It now reads zeros.
    code = """
import sys, openfam
how = sys.argv[1]
if how == "with-block":
    with openfam.Fam() as f:
        r = f.create_region("gone", 1 << 20)
        a = r.allocate(4096, "x").as_array()
        a[:4] = 7
else:
    f = openfam.Fam()
    f.initialize()
    r = f.create_region("gone", 1 << 20)
    a = r.allocate(4096, "x").as_array()
    a[:4] = 7
    if how == "finalize":
        f.finalize()
    else:
        r.destroy()
a[5] = 1
print("read", int(a[0]), int(a[5]))
"""
    r = run_python(code, private_store, args=[how])
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert r.stdout.startswith("read "), r.stdout


def test_calls_before_initialize_say_not_initialized(private_store):
    # They used to raise AttributeError: 'types.SimpleNamespace' object has
    # no attribute ... (in a fresh interpreter, where nothing loaded the
    # library yet).
    code = """
import openfam
f = openfam.Fam()
for call in (lambda: f.create_region("x", 1 << 20), lambda: f.lookup_region("x"),
             lambda: f.lookup("i", "x"), f.quiet, f.progress):
    try:
        call()
        print("no error")
    except openfam.InvalidArgument as e:
        print("not initialized" in str(e), e.code)
"""
    r = run_python(code, private_store)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:5] == ["True 4"] * 5, r.stdout


def test_current_is_the_active_instance(fam):
    assert openfam.Fam.current() is fam


def test_initialize_of_the_same_group_attaches(fam):
    # Re-running `fam = openfam.Fam(group).initialize()` returns the live
    # instance; an object whose return value was ignored acts as it.
    again = openfam.Fam(fam.group)
    assert again.initialize() is fam
    assert again.active and again.pe_count == fam.pe_count
    r = again.create_region(unique("a"), 1 << 16)
    assert fam.lookup_region(r.name).global_descriptor == r.global_descriptor
    r.destroy()
    assert fam.initialize() is fam  # initializing the live one is harmless too
    assert fam.active and openfam.Fam.current() is fam


def test_initialize_of_another_group_or_options_is_refused(fam):
    for other in (openfam.Fam(fam.group + "-other"), openfam.Fam(fam.group, options={"runtime": "NONE"})):
        with pytest.raises(openfam.InvalidArgument) as ei:
            other.initialize()
        assert "already initialized" in str(ei.value) and "Fam.current()" in str(ei.value)
        assert not other.active
    assert fam.active


def test_with_block_does_not_share_the_live_instance(fam):
    # A with block finalizes at its end, so it must not attach to (and then
    # end) an instance it did not start.
    with pytest.raises(openfam.InvalidArgument, match="with. block cannot share"):
        with openfam.Fam(fam.group):
            pass
    assert fam.active and openfam.Fam.current() is fam


def test_current_is_none_when_nothing_is_active(private_store):
    code = """
import openfam
print(openfam.Fam.current())
f = openfam.Fam("solo")
f.initialize()
print(openfam.Fam.current() is f)
g = openfam.Fam("solo")
g.initialize()          # attaches
g.finalize()            # ends the one instance
print(f.active, openfam.Fam.current())
with openfam.Fam("solo") as h:
    print(openfam.Fam.current() is h)
print(openfam.Fam.current())
"""
    r = run_python(code, private_store)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["None", "True", "False", "None", "True", "None"]


def test_fam_repr_and_html(fam):
    assert repr(fam).startswith("<openfam.Fam group='pytest' pe 0 of 1, embedded")
    r = fam.create_region(unique("h"), 1 << 16)
    try:
        page = fam._repr_html_()
        assert page.startswith("<b>openfam.Fam</b> <code>pytest</code><table>")
        for text in ("0 of 1", "region(s)", "embedded", os.environ["OPENFAM_DATA_DIR"], "libopenfam.so.0"):
            assert text in page, text
    finally:
        r.destroy()
    assert "(not initialized)" in openfam.Fam("x")._repr_html_()
    assert "&lt;" in openfam.Fam("<x>")._repr_html_()  # the group is escaped
