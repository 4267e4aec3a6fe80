"""Persistence (issue 20): DataItem.persist(), quiet() on persistent regions,
and the OPENFAM_PERSIST policy, checked on the page state (smaps): after
quiet no page of the region's files is dirty in this process."""

import os
import textwrap

import pytest

import openfam

from conftest import run_python, unique


def dirty_kb(under: str) -> int:
    """kB of Shared_Dirty + Private_Dirty of this process's mappings under a directory."""
    under = under.rstrip("/") + "/"
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            fields = line.split()
            if fields and "-" in fields[0] and all(c in "0123456789abcdef-" for c in fields[0]):
                inside = len(fields) >= 6 and fields[5].startswith(under)
            elif inside and fields[:1] in (["Shared_Dirty:"], ["Private_Dirty:"]):
                total += int(fields[1])
    return total


REGIONS = os.path.join(os.environ["OPENFAM_DATA_DIR"], "regions")


def test_quiet_and_persist_make_writes_durable(fam):
    r = fam.create_region(unique("p"), 4 << 20, persistent=True)
    try:
        it = r.allocate(1 << 20, unique("i"))
        for i in range(32):
            it.put(b"x" * 8, i * 4096)
        assert dirty_kb(REGIONS) > 0, "no dirty page before quiet: the check could not fail"
        fam.quiet()
        assert dirty_kb(REGIONS) == 0
        for i in range(8):
            it.put(b"y", i * 4096)
        it.persist(0, 8 * 4096)
        assert dirty_kb(REGIONS) == 0
        it.put(b"z", 0)
        it.persist()  # to the end of the item
        assert dirty_kb(REGIONS) == 0
        with pytest.raises(openfam.OutOfRange):
            it.persist(1 << 20, 1)
        with pytest.raises(openfam.InvalidArgument):
            it.persist(0, 0)
    finally:
        r.destroy()


def test_persist_on_a_volatile_item_only_checks(item):
    item.put(b"abc")
    item.persist(0, 3)
    with pytest.raises(openfam.OutOfRange):
        item.persist(4096, 1)


def test_lazy_policy_leaves_quiet_to_the_timer(private_store):
    store = dict(private_store, OPENFAM_PERSIST="lazy", OPENFAM_PERSIST_INTERVAL="1h")
    code = textwrap.dedent(
        """
        import os, sys
        sys.path.insert(0, %r)
        from test_persist import dirty_kb
        import openfam
        regions = os.path.join(os.environ["OPENFAM_DATA_DIR"], "regions")
        with openfam.Fam("lazy") as f:
            r = f.create_region("lz", 1 << 20, persistent=True)
            it = r.allocate(1 << 16, "i")
            for i in range(8):
                it.put(b"q", i * 4096)
            f.quiet()
            before = dirty_kb(regions)
            it.persist()
            print(before, dirty_kb(regions))
        """
        % os.path.dirname(os.path.abspath(__file__))
    )
    p = run_python(code, store)
    assert p.returncode == 0, p.stderr
    before, after = map(int, p.stdout.split())
    assert before > 0, "lazy: quiet flushed the region"
    assert after == 0


def test_bad_policy_is_refused(private_store):
    p = run_python("import openfam\nwith openfam.Fam('bad'):\n    pass\n", dict(private_store, OPENFAM_PERSIST="never"))
    assert p.returncode != 0 and "OPENFAM_PERSIST" in p.stderr
