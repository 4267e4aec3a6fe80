"""Build hook: ships libopenfam.so.0 inside the package as package data.

The library comes from OPENFAM_LIBRARY when set, else from the repository's
build/lib, which is built with `make lib` when it is missing (a fresh clone).
A wheel that carries the library is platform-specific, so it is tagged so.
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SONAME = "libopenfam.so.0"


def find_library() -> Path:
    env = os.environ.get("OPENFAM_LIBRARY")
    if env:
        return Path(env)
    built = REPO / "build" / "lib" / SONAME
    if not built.exists() and (REPO / "Makefile").exists():
        subprocess.run(["make", "-C", str(REPO), "lib"], check=True)
    if not built.exists():
        raise SystemExit(
            "openfam: %s not found; run `make lib` in %s or set OPENFAM_LIBRARY" % (built, REPO)
        )
    return built


class BuildPyWithLibrary(build_py):
    def run(self) -> None:
        super().run()
        dest = Path(self.build_lib) / "openfam" / "_native"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(find_library(), dest / SONAME)


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
