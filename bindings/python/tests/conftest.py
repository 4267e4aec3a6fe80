"""Shared fixtures. Every test runs against a private, temporary FAM store.

The library reads OPENFAM_DATA_DIR / OPENFAM_SHM_DIR / OPENFAM_BACKUP_DIR
when it initializes, so they are set here, at import time, before any test
can initialize it; the user's own store is never touched.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Dict, Iterator, Sequence

import pytest

STORE_VARS = ("OPENFAM_DATA_DIR", "OPENFAM_SHM_DIR", "OPENFAM_BACKUP_DIR")
HERE = Path(__file__).resolve().parent
PKG_ROOT = HERE.parent
REPO = PKG_ROOT.parents[1]

_TMP = tempfile.mkdtemp(prefix="openfam-pytest-")

#: famrun, from `make test-python` (FAMRUN) or the source tree's build.
FAMRUN = Path(os.environ.get("FAMRUN", REPO / "build" / "bin" / "famrun"))
# famrun starts a famd for the job; it needs one beside it (or a server).
HAVE_LAUNCHER = FAMRUN.exists() and (
    (FAMRUN.parent / "famd").exists() or "OPENFAM_SERVER" in os.environ or "FAMD" in os.environ
)
# `make test-python` sets FAMRUN and builds famd and famrun first, so there
# the launcher is required; a bare pytest run without them skips.
needs_famrun = pytest.mark.skipif(
    not HAVE_LAUNCHER and "FAMRUN" not in os.environ, reason="famrun/famd are not built (make famd famrun)"
)


def make_store(root: str) -> Dict[str, str]:
    """Creates a fresh store under root; returns the environment naming it."""
    env = {}
    for var in STORE_VARS:
        d = os.path.join(root, var.split("_")[1].lower())
        os.makedirs(d, exist_ok=True)
        env[var] = d
    return env


os.environ.update(make_store(os.path.join(_TMP, "session")))


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    shutil.rmtree(_TMP, ignore_errors=True)


def unique(prefix: str = "t") -> str:
    """A region/item name no other test (or earlier run) uses."""
    return "%s%s" % (prefix, uuid.uuid4().hex[:16])


def run_python(
    code: str, store: Dict[str, str], timeout: float = 120, args: Sequence[str] = ()
) -> "subprocess.CompletedProcess[str]":
    """Runs code as a script in a fresh interpreter with its own store.

    The timeout makes a hang a failure instead of a stuck suite.
    """
    env = dict(os.environ)
    env.update(store)
    fd, path = tempfile.mkstemp(suffix=".py", dir=_TMP)
    with os.fdopen(fd, "w") as f:
        f.write(code)
    try:
        return subprocess.run(
            [sys.executable, path, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        os.unlink(path)


@pytest.fixture(scope="session")
def fam() -> Iterator["object"]:
    import openfam

    with openfam.Fam("pytest") as f:
        yield f


@pytest.fixture
def region(fam):  # type: ignore[no-untyped-def]
    r = fam.create_region(unique("r"), 1 << 20)
    yield r
    if fam.active and r._h is not None:
        r.destroy()


@pytest.fixture
def item(region):  # type: ignore[no-untyped-def]
    return region.allocate(4096, unique("i"))


@pytest.fixture
def private_store(tmp_path: Path) -> Dict[str, str]:
    return make_store(str(tmp_path))
