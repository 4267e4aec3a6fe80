"""`python -m openfam`: library, versions, store and server, touching nothing."""

import os
import subprocess
import sys

import openfam


def _about(env_changes, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENFAM_", "FAMRUN_", "SLURM_"))}
    env["HOME"] = str(tmp_path / "home")
    env.pop("XDG_DATA_HOME", None)
    env.update(env_changes)
    r = subprocess.run([sys.executable, "-m", "openfam"], env=env, capture_output=True, text=True,
                       timeout=60, cwd=str(tmp_path))
    rows = {}
    for line in r.stdout.splitlines():
        k, v = line.split(": ", 1)
        rows[k + ":"] = v.strip()
    return r, rows


def test_defaults(tmp_path):
    r, rows = _about({}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert rows["openfam (Python):"] == openfam.__version__
    assert rows["OpenFAM API:"] == "3.2.0"
    assert rows["library:"] == openfam.library_path()
    assert rows["server:"] == "embedded  [no OPENFAM_SERVER]"
    data = str(tmp_path / "home" / ".local" / "share" / "openfam")
    assert rows["data directory:"] == data + "  [default]"
    assert rows["volatile directory:"].endswith("openfam-%d  [default]" % os.getuid())
    assert rows["backup directory:"] == os.path.join(data, "backups") + "  [default]"
    assert "job:" not in rows
    assert not os.path.exists(data), "python -m openfam must not create the store"


def test_environment(tmp_path):
    r, rows = _about({"OPENFAM_DATA_DIR": "/srv/fam", "OPENFAM_SERVER": "unix:/run/famd.sock",
                      "FAMRUN_JOB": "00ff"}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert rows["server:"] == "unix:/run/famd.sock  [OPENFAM_SERVER]"
    assert rows["data directory:"] == "/srv/fam (unused: regions live at the server)  [OPENFAM_DATA_DIR]"
    assert rows["job:"] == "00ff  [FAMRUN_JOB]"


def test_missing_library_exits_1(tmp_path):
    r, rows = _about({"OPENFAM_LIBRARY": str(tmp_path / "nope.so")}, tmp_path)
    assert r.returncode == 1
    assert rows["library:"].startswith("NOT LOADED: cannot load libopenfam.so.0")
    assert "nope.so (no such file)" in rows["library:"]


def test_persistence_policy(tmp_path):
    r, rows = _about({}, tmp_path)
    assert rows["persistence:"] == "quiet  [default]"
    r, rows = _about({"OPENFAM_PERSIST": "lazy", "OPENFAM_PERSIST_INTERVAL": "2s"}, tmp_path)
    assert rows["persistence:"] == "lazy, flushed every 2s  [OPENFAM_PERSIST]"
    r, rows = _about({"OPENFAM_PERSIST": "sometimes"}, tmp_path)
    assert rows["persistence:"].startswith("INVALID")
