#!/usr/bin/env bash
# The Python package: installs python/ (which builds the C library from this tree with CMake
# and bundles libposenc.so) into a fresh virtual environment under the build directory and
# runs its pytest suite (python/tests) on every ISA this CPU has. The environment is Debian's
# Python 3 with its NumPy and its CPU-only PyTorch (python3-torch 1.13.1, through
# --system-site-packages), plus from PyPI pytest, ml_dtypes and transformers 4.49.0, the
# newest transformers that imports with that torch (4.50 needs torch.distributed.tensor, a
# torch 2 module). Installs the Debian packages it needs first. Exit status: pytest's (5 when
# no test was collected).
# Usage: scripts/test-python.sh [build-dir] [cmake-build-dir]   (default: build-python; PYTHON
#        picks the interpreter, default /usr/bin/python3, the one python3-torch is built
#        for; a CMake build directory given second is
#        where the package's build compiles the library, POSENC_CMAKE_BUILD_DIR: scripts/test.sh
#        passes the native suite's, so nothing is compiled again)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build-python}
if [ -n "${2:-}" ]; then export POSENC_CMAKE_BUILD_DIR; POSENC_CMAKE_BUILD_DIR=$(cd "$2" && pwd); fi
python=${PYTHON:-/usr/bin/python3}
transformers_version=4.49.0

scripts/install-deps.sh --python
mkdir -p "$build"
venv=$(cd "$build" && pwd)/venv
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
# The package's build finds the C sources through POSENC_SOURCE_DIR also where pip builds in
# a copy of python/ (pip < 21.3). NumPy stays Debian's (torch 1.13 is built against NumPy 1):
# nothing asked for here needs another.
numpy_version=$("$venv/bin/python" -c 'import numpy; print(numpy.__version__)')
POSENC_SOURCE_DIR=$root "$venv/bin/python" -m pip install --disable-pip-version-check -q \
  "$root/python" pytest hypothesis ml_dtypes "transformers==$transformers_version" \
  "numpy==$numpy_version"
"$venv/bin/python" -c 'import numpy, torch, transformers; print("posenc: Python tests with",
  "numpy", numpy.__version__, "torch", torch.__version__, "transformers",
  transformers.__version__)'
# Run from the build directory, so that `posenc` is the installed package, not python/posenc.
cd "$build"
status=0
"$venv/bin/python" -m pytest -p no:cacheprovider "$root/python/tests" || status=$?
exit "$status"
