"""Several PEs sharing regions: alone always, under famrun when it exists."""

import os
import subprocess
import sys

import pytest

from conftest import FAMRUN, HERE, needs_famrun, run_python, unique

SCRIPT = HERE / "multipe_check.py"


def test_job_script_alone(private_store):
    r = run_python(SCRIPT.read_text(), private_store, args=[unique("mp")])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[0] == "PE 0/1 ok"


@needs_famrun
@pytest.mark.parametrize("n", [2, 3])
def test_job_script_under_famrun(private_store, n):
    env = dict(os.environ, **private_store)
    r = subprocess.run(
        [str(FAMRUN), "-n", str(n), sys.executable, str(SCRIPT), unique("mp")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    lines = sorted(line for line in r.stdout.splitlines() if line.startswith("PE "))
    assert lines == ["PE %d/%d ok" % (i, n) for i in range(n)]
