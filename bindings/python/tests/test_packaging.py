"""Building the package: the wheel's tag, and one clear line when it cannot.

Builds run offline (--no-build-isolation: the venv's setuptools and wheel)
on a copy of the package, so the source tree gets no build/ or egg-info.
"""

import os
import platform
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import openfam
from conftest import PKG_ROOT

pytest.importorskip("wheel")


def _copy_package(dest: Path) -> Path:
    shutil.copytree(PKG_ROOT, dest, ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__", "tests", "bench", "examples"))
    return dest


def _pip(args, env, cwd):
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args,
                           "--no-deps", "--no-build-isolation"],
                          env=env, cwd=str(cwd), capture_output=True, text=True, timeout=600)


def _env_without_go(tmp_path: Path, extra_bin: Path = None):
    # PATH keeps what pip and setuptools need, minus every directory with a
    # `go`; a fake tool directory may be put first.
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not os.path.exists(os.path.join(d, "go"))]
    if extra_bin is not None:
        dirs.insert(0, str(extra_bin))
    env = {k: v for k, v in os.environ.items() if k != "OPENFAM_LIBRARY"}
    env["PATH"] = os.pathsep.join(dirs)
    return env


def test_wheel_is_py3_none_platform(tmp_path):
    pkg = _copy_package(tmp_path / "pkg")
    env = dict(os.environ, OPENFAM_LIBRARY=openfam.library_path())
    r = _pip(["wheel", "-q", "-w", str(tmp_path / "dist"), str(pkg)], env, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = (tmp_path / "dist").glob("*.whl")
    # Any Python 3 on this platform: the library is loaded with ctypes, so
    # no CPython ABI is involved (cp311-cp311 would be wrong).
    assert whl.name == "openfam-%s-py3-none-linux_%s.whl" % (openfam.__version__, platform.machine())
    names = zipfile.ZipFile(whl).namelist()
    assert "openfam/_native/libopenfam.so.0" in names
    assert "openfam/__main__.py" in names and "openfam/py.typed" in names


def _fake_checkout(tmp_path: Path, makefile: str) -> Path:
    repo = tmp_path / "repo"
    _copy_package(repo / "bindings" / "python")
    (repo / "Makefile").write_text(makefile)
    return repo / "bindings" / "python"


def _our_lines(r):
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out
    return [line.strip() for line in out.splitlines() if line.strip().startswith("openfam:")]


def test_install_without_go_fails_with_one_line(tmp_path):
    pkg = _fake_checkout(tmp_path, "lib:\n\t@echo should not run; exit 3\n")
    r = _pip(["install", "--target", str(tmp_path / "t"), str(pkg)], _env_without_go(tmp_path), tmp_path)
    assert r.returncode != 0
    lines = _our_lines(r)
    assert lines == ["openfam: libopenfam.so.0 is not built and building it needs Go >= 1.26 and "
                     "make (`go` not on PATH): install them (see README), or build it elsewhere "
                     "and set OPENFAM_LIBRARY to its path"], r.stdout + r.stderr
    assert not (tmp_path / "t" / "openfam").exists()


def test_failing_make_lib_is_one_line(tmp_path):
    # Go present (a stand-in) but the build fails: its last line is named.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_go = bin_dir / "go"
    fake_go.write_text("#!/bin/sh\nexit 1\n")
    fake_go.chmod(fake_go.stat().st_mode | stat.S_IXUSR)
    pkg = _fake_checkout(tmp_path, "lib:\n\t@echo 'go: go.mod requires go >= 1.26'; exit 3\n")
    r = _pip(["install", "--target", str(tmp_path / "t"), str(pkg)], _env_without_go(tmp_path, bin_dir), tmp_path)
    assert r.returncode != 0
    (line,) = _our_lines(r)
    assert line.startswith("openfam: `make lib` in %s failed (go: go.mod requires go >= 1.26" % (tmp_path / "repo"))


def test_openfam_library_that_is_not_a_file(tmp_path):
    pkg = _copy_package(tmp_path / "pkg")
    env = dict(os.environ, OPENFAM_LIBRARY=str(tmp_path / "missing.so"))
    r = _pip(["wheel", "-w", str(tmp_path / "dist"), str(pkg)], env, tmp_path)
    assert r.returncode != 0
    assert _our_lines(r) == ["openfam: OPENFAM_LIBRARY=%s is not a file" % (tmp_path / "missing.so")]
