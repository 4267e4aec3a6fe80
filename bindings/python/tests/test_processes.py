"""Persistence across interpreters, and fork safety."""

import textwrap

from conftest import run_python, unique


def test_persistent_region_survives_two_interpreter_runs(private_store):
    rname, iname = unique("p"), unique("i")
    write = textwrap.dedent(
        """
        import sys, numpy as np, openfam
        rname, iname = sys.argv[1:3]
        with openfam.Fam() as fam:
            r = fam.create_region(rname, 1 << 20, persistent=True)
            it = r.allocate(8 * 1000, iname)
            it.put(np.arange(1000, dtype=np.float64) * 0.5)
            it.set(0, 4242, np.int64)
        print("written")
        """
    )
    read = textwrap.dedent(
        """
        import sys, numpy as np, openfam
        rname, iname = sys.argv[1:3]
        with openfam.Fam() as fam:
            assert fam.lookup_region(rname).stat().persistent
            it = fam.lookup(iname, rname)
            a = it.get_into(np.empty(1000))
            assert it.fetch(0, np.int64) == 4242
            assert (a[1:] == np.arange(1, 1000) * 0.5).all()
            fam.lookup_region(rname).destroy()
        print("read")
        """
    )
    r1 = run_python(write, private_store, args=[rname, iname])
    assert r1.returncode == 0 and "written" in r1.stdout, r1.stderr
    r2 = run_python(read, private_store, args=[rname, iname])
    assert r2.returncode == 0 and "read" in r2.stdout, r2.stderr
    r3 = run_python(
        "import sys, openfam\nwith openfam.Fam() as f:\n"
        "    try:\n        f.lookup_region(sys.argv[1])\n    except openfam.NotFound:\n        print('gone')\n",
        private_store,
        args=[rname],
    )
    assert "gone" in r3.stdout, r3.stderr


def test_forked_child_gets_clear_error_not_hang(private_store):
    code = textwrap.dedent(
        """
        import os, openfam
        with openfam.Fam() as fam:
            r = fam.create_region("forkr", 1 << 16)
            it = r.allocate(64, "x")
            pid = os.fork()
            if pid == 0:
                codes = 0
                for call in (lambda: it.get(8), lambda: fam.barrier(), lambda: openfam.Fam().initialize()):
                    try:
                        call()
                    except openfam.ForkedChildError as e:
                        codes += "spawn" in str(e) and e.code == 18
                os._exit(10 + codes)
            _, status = os.waitpid(pid, 0)
            print("child", os.waitstatus_to_exitcode(status))
            it.put(b"parent ok")
            print(it.get(9).decode())
            r.destroy()
        """
    )
    r = run_python(code, private_store, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "child 13" in r.stdout
    assert "parent ok" in r.stdout


def test_spawned_worker_works(private_store):
    code = textwrap.dedent(
        """
        import multiprocessing as mp, openfam

        def work(q):
            with openfam.Fam() as fam:
                q.put(fam.pe_count)

        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=work, args=(q,))
            p.start()
            print("pe_count", q.get(timeout=60))
            p.join()
        """
    )
    r = run_python(code, private_store, timeout=90)
    assert r.returncode == 0, r.stderr
    assert "pe_count 1" in r.stdout


def test_abort_ends_the_process_with_status(private_store):
    r = run_python("import openfam\nwith openfam.Fam() as f:\n    f.abort(7)\nprint('not reached')\n", private_store)
    assert r.returncode == 7, r.stderr
    assert "not reached" not in r.stdout
