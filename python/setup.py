"""Builds the posenc C library with CMake and puts libposenc.so inside the package.

The C sources are the repository that holds this python/ directory (its parent), or the
directory named by the environment variable POSENC_SOURCE_DIR. pip >= 21.3 builds a local
directory in place, so the parent is found; set POSENC_SOURCE_DIR when building from a copy
(an sdist, an older pip). Needs cmake, a C compiler and libsleef-dev (scripts/install-deps.sh).
Parallel jobs: POSENC_BUILD_JOBS, else CMAKE_BUILD_PARALLEL_LEVEL, else the CPU count.
POSENC_CMAKE_BUILD_DIR names a CMake build directory of the same sources to build target
posenc in (configured there first if it is not yet), instead of a temporary one: a build
that has the library already (scripts/test.sh passes the native suite's) compiles nothing.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
CMAKE_OPTIONS = [
    "-DPOSENC_BUILD_TESTS=OFF",
    "-DPOSENC_BUILD_BENCH=OFF",
    "-DPOSENC_BUILD_TOOLS=OFF",
    "-DPOSENC_BUILD_EXAMPLES=OFF",
    "-DCMAKE_BUILD_TYPE=Release",
]


def source_root():
    explicit = os.environ.get("POSENC_SOURCE_DIR")
    root = Path(explicit).resolve() if explicit else HERE.parent
    if not ((root / "CMakeLists.txt").is_file() and (root / "include" / "posenc.h").is_file()):
        raise RuntimeError(
            f"posenc: no C sources at {root} (CMakeLists.txt and include/posenc.h). Build from "
            "the repository's python/ directory with pip >= 21.3, or set POSENC_SOURCE_DIR to "
            "the repository root.")
    return root


def library_version(root):
    text = (root / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*posenc\s+VERSION\s+([0-9][0-9.]*)", text)
    if not match:
        raise RuntimeError(f"posenc: no 'project(posenc VERSION ...)' in {root}/CMakeLists.txt")
    return match.group(1)


def build_jobs():
    jobs = os.environ.get("POSENC_BUILD_JOBS") or os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL")
    return jobs or str(os.cpu_count() or 1)


def build_library(package_dir):
    """Configures and builds target posenc in a temporary directory (or the one named by
    POSENC_CMAKE_BUILD_DIR) and copies the shared library (the file itself, not its
    symlinks) to package_dir/libposenc.so."""
    given = os.environ.get("POSENC_CMAKE_BUILD_DIR")
    if given:
        compile_library(Path(given).resolve(), package_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="posenc-cmake-") as build_dir:
            compile_library(Path(build_dir), package_dir)


def compile_library(build_dir, package_dir):
    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError("posenc: cmake not found (scripts/install-deps.sh installs it)")
    if not (build_dir / "CMakeCache.txt").is_file():
        subprocess.run([cmake, "-S", str(source_root()), "-B", str(build_dir), *CMAKE_OPTIONS],
                       check=True)
    subprocess.run([cmake, "--build", str(build_dir), "--target", "posenc",
                    "--parallel", build_jobs()], check=True)
    built = build_dir / "libposenc.so"
    if not built.exists():
        raise RuntimeError(f"posenc: the build produced no libposenc.so in {build_dir}")
    package_dir.mkdir(parents=True, exist_ok=True)
    target = package_dir / "libposenc.so"
    shutil.copyfile(built.resolve(), target)
    target.chmod(0o755)


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        # An editable install imports the package from the source directory.
        editable = getattr(self, "editable_mode", False)
        build_library(HERE / "posenc" if editable else Path(self.build_lib) / "posenc")


class BinaryDistribution(Distribution):
    """The wheel carries a native library: tag it for this platform, not as pure Python."""

    def has_ext_modules(self):
        return True


setup(
    version=library_version(source_root()),
    cmdclass={"build_py": BuildPyWithLibrary},
    distclass=BinaryDistribution,
)
