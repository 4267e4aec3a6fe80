"""Several PEs sharing regions: alone always, under famrun when it exists."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HERE, REPO, run_python, unique

SCRIPT = HERE / "multipe_check.py"
FAMRUN = Path(os.environ.get("FAMRUN", REPO / "build" / "bin" / "famrun"))
# famrun starts a famd for the job; it needs one beside it (or a server).
HAVE_LAUNCHER = FAMRUN.exists() and (
    (FAMRUN.parent / "famd").exists() or "OPENFAM_SERVER" in os.environ or "FAMD" in os.environ
)


def test_job_script_alone(private_store):
    r = run_python(SCRIPT.read_text(), private_store, args=[unique("mp")])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[0] == "PE 0/1 ok"


# `make test-python` sets FAMRUN and builds famd and famrun first, so there
# the launcher is required; a bare pytest run without them skips.
@pytest.mark.skipif(not HAVE_LAUNCHER and "FAMRUN" not in os.environ, reason="famrun/famd are not built (make famd famrun)")
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
