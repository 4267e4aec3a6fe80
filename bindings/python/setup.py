"""Build hook: ships libopenfam.so.0 inside the package as package data.

The library comes from OPENFAM_LIBRARY when set, else from the repository's
build/lib, which is built with `make lib` when it is missing (a fresh clone).
When it can be neither found nor built (no Go toolchain, say), the build
stops at once with one line saying what to do, not a traceback.

The package is pure Python plus that library (loaded through ctypes, not a
CPython extension), so its wheel is tagged py3-none-<platform>: any Python 3
on the platform the library was built for.
"""

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 has the command itself
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # older setuptools: the wheel package's, which warns that it moved
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SONAME = "libopenfam.so.0"
BUILT = REPO / "build" / "lib" / SONAME


def fail(msg: str) -> "None":
    """Stops the build with one line on stderr (pip shows it as is)."""
    sys.stderr.write("openfam: %s\n" % msg)
    raise SystemExit(1)


def find_library() -> Path:
    """The library to ship; builds it with `make lib` in a checkout without one."""
    env = os.environ.get("OPENFAM_LIBRARY")
    if env:
        if not Path(env).is_file():
            fail("OPENFAM_LIBRARY=%s is not a file" % env)
        return Path(env)
    if BUILT.exists():
        return BUILT
    if not (REPO / "Makefile").exists():
        fail("%s is not built and this is not a source checkout; set OPENFAM_LIBRARY "
             "to an installed %s" % (SONAME, SONAME))
    missing = [tool for tool in ("go", "make") if shutil.which(tool) is None]
    if missing:
        fail("%s is not built and building it needs Go >= 1.26 and make (%s not on PATH): install "
             "them (see README), or build it elsewhere and set OPENFAM_LIBRARY to its path"
             % (SONAME, " and ".join("`%s`" % m for m in missing)))
    r = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "lib"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or not BUILT.exists():
        # The cause is the last line a command printed, not make's own
        # "make: *** [lib] Error 1".
        lines = [ln for ln in r.stdout.strip().splitlines() if ln and not ln.startswith(("make:", "make["))]
        last = lines[-1] if lines else "exit status %d" % r.returncode
        fail("`make lib` in %s failed (%s); run it there to see why" % (REPO, last))
    return BUILT


class BuildPyWithLibrary(build_py):
    """build_py that also copies the library into openfam/_native."""

    def run(self) -> None:
        lib = find_library()
        super().run()
        dest = Path(self.build_lib) / "openfam" / "_native"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(lib, dest / SONAME)


class BinaryDistribution(Distribution):
    """Says the package is platform-specific (it carries a native library),
    so its files go to the platform library directory, at the wheel's root."""

    def has_ext_modules(self) -> bool:
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for any Python 3 on this platform: py3-none-<platform>, not
    the cpXY-cpXY tag a distribution with extension modules would get (the
    library is loaded with ctypes and does not use CPython's ABI)."""

    def get_tag(self):  # type: ignore[no-untyped-def]
        _python, _abi, plat = super().get_tag()
        return "py3", "none", plat


# Fail before setuptools starts, so a missing toolchain is the only thing
# printed, not the tail of a build log. Metadata-only runs (egg_info,
# dist_info, sdist) do not need the library.
if any(cmd in sys.argv for cmd in ("bdist_wheel", "build", "build_py", "install", "editable_wheel", "develop")):
    find_library()

setup(cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel}, distclass=BinaryDistribution)
