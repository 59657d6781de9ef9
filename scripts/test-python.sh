#!/usr/bin/env bash
# The Python package: installs python/ (which builds the C library from this tree with CMake
# and bundles libposenc.so) into a fresh virtual environment under the build directory, with
# pytest, numpy and hypothesis from PyPI, and runs its pytest suite (python/tests) on every
# ISA this CPU has. Installs the Debian packages it needs first. Exit status: pytest's (5 when
# no test was collected).
# Usage: scripts/test-python.sh [build-dir] [cmake-build-dir]   (default: build-python; PYTHON
#        picks the interpreter, default python3; a CMake build directory given second is
#        where the package's build compiles the library, POSENC_CMAKE_BUILD_DIR: scripts/test.sh
#        passes the native suite's, so nothing is compiled again)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build-python}
if [ -n "${2:-}" ]; then export POSENC_CMAKE_BUILD_DIR; POSENC_CMAKE_BUILD_DIR=$(cd "$2" && pwd); fi
python=${PYTHON:-python3}

scripts/install-deps.sh
mkdir -p "$build"
venv=$(cd "$build" && pwd)/venv
rm -rf "$venv"
"$python" -m venv "$venv"
# The package's build finds the C sources through POSENC_SOURCE_DIR also where pip builds in
# a copy of python/ (pip < 21.3).
POSENC_SOURCE_DIR=$root "$venv/bin/python" -m pip install --disable-pip-version-check \
  "$root/python" pytest numpy hypothesis
# Run from the build directory, so that `posenc` is the installed package, not python/posenc.
cd "$build"
status=0
"$venv/bin/python" -m pytest -p no:cacheprovider "$root/python/tests" || status=$?
exit "$status"
