#!/usr/bin/env bash
# Packaging test: installs posenc into a temporary prefix from a build that is already
# configured in the build directory (scripts/test.sh passes the native suite's build, so
# nothing is compiled again), or else from a Release build of the libraries alone made there, and builds and runs tests/consumer/consumer.c outside the source tree in every way
# an integrator links it: find_package (shared and static), pkg-config (shared and static),
# add_subdirectory of the source tree (shared and static). Also checks that the installed
# libposenc.so exports only posenc_ symbols and that the installed CMake package names no
# path of this machine's build. One line per step; exits non-zero on the first failure,
# with that step's log.
# Usage: scripts/test-consumers.sh [build-dir]   (default: build-consumers)
# The consumers are built under <build-dir>/consumers.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${1:-build-consumers}
mkdir -p "$build"
build=$(cd "$build" && pwd)
work="$build/consumers"
prefix=$(mktemp -d "${TMPDIR:-/tmp}/posenc-prefix.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
rm -rf "$work"
mkdir -p "$work"
jobs=$(nproc)
cc=${CC:-cc}
cxx=${CXX:-c++}
strict=(-std=c11 -Wall -Wextra -Wpedantic -Werror)

# step <name> <command>...: runs the command with its output in a log; one line either way.
step() {
  local name=$1 log
  shift
  log="$work/$(echo "$name" | tr -c 'A-Za-z0-9_\n-' '_').log"
  if "$@" >"$log" 2>&1; then
    echo "$name: ok"
  else
    echo "$name: FAILED (log: $log)"
    tail -n 40 "$log" | sed 's/^/    /'
    exit 1
  fi
}

# A program linked against the static library must not need libposenc.so.
not_needing_shared() {
  "$1" && ! readelf -d "$1" | grep -q 'NEEDED.*libposenc'
}

only_posenc_symbols() {
  local lib=$1 others
  nm -D --defined-only "$lib" | awk '{print $NF}' >"$work/symbols.txt"
  others=$(grep -v '^posenc_' "$work/symbols.txt" || true)
  echo "$(wc -l <"$work/symbols.txt") exported symbols"
  if [ -n "$others" ]; then
    echo "not posenc_: $others"
    return 1
  fi
  grep -q '^posenc_version$' "$work/symbols.txt"
}

no_build_paths() {
  ! grep -rn -e "$src" -e "$build" -e '/[^ "]*/libsleef' "$prefix/lib"*/cmake
}

cmake_consumer() {  # <source dir> <binary dir> <cmake args>...
  local dir=$1 bin=$2
  shift 2
  cmake -S "$dir" -B "$bin" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" &&
    cmake --build "$bin" -j "$jobs" && "$bin/consumer_shared" && not_needing_shared "$bin/consumer_static"
}

pkg_config_shared() {
  local libdir
  libdir=$(pkg-config --variable=libdir posenc)
  # shellcheck disable=SC2046
  "$cc" "${strict[@]}" tests/consumer/consumer.c -o "$work/pc_shared" \
    $(pkg-config --cflags --libs posenc) -lm -Wl,-rpath,"$libdir" &&
    "$work/pc_shared" && readelf -d "$work/pc_shared" | grep -q 'NEEDED.*libposenc\.so\.0'
}

# --static gives the private dependencies; -l:libposenc.a picks the archive over the .so.
pkg_config_static() {
  local libs
  libs=$(pkg-config --static --libs posenc)
  echo "pkg-config --static --libs posenc: $libs"
  case " $libs " in *" -lsleef "*) ;; *) echo "no -lsleef"; return 1 ;; esac
  case " $libs " in *" -lm "*) ;; *) echo "no -lm"; return 1 ;; esac
  # shellcheck disable=SC2046,SC2001
  "$cc" "${strict[@]}" tests/consumer/consumer.c -o "$work/pc_static" \
    $(pkg-config --cflags posenc) $(echo "$libs" | sed 's/-lposenc\b/-l:libposenc.a/') -lm &&
    not_needing_shared "$work/pc_static"
}

# The header as C++ (extern "C"), linked through pkg-config.
pkg_config_cxx() {
  # shellcheck disable=SC2046
  "$cxx" -x c++ -std=c++17 -Wall -Wextra -Werror tests/consumer/consumer.c -o "$work/pc_cxx" \
    $(pkg-config --cflags --libs posenc) -Wl,-rpath,"$(pkg-config --variable=libdir posenc)" &&
    "$work/pc_cxx"
}

scripts/install-deps.sh
if [ ! -f "$build/CMakeCache.txt" ]; then
  step "posenc build (Release, libraries only)" \
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON \
    -DPOSENC_BUILD_TESTS=OFF -DPOSENC_BUILD_BENCH=OFF -DPOSENC_BUILD_TOOLS=OFF \
    -DPOSENC_BUILD_EXAMPLES=OFF -DPOSENC_INSTALL=ON
fi
step "posenc compile (up to date when the build is reused)" \
  cmake --build "$build" -j "$jobs" --target posenc posenc_static
step "posenc install into $prefix" cmake --install "$build" --prefix "$prefix"

libposenc=$(find "$prefix" -name 'libposenc.so' | head -n 1)
pcdir=$(dirname "$(find "$prefix" -name posenc.pc | head -n 1)")
export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
step "installed libposenc.so exports only posenc_ symbols" only_posenc_symbols "$libposenc"
step "installed CMake package names no build-machine path" no_build_paths

step "consumer find_package (shared, static)" \
  cmake_consumer tests/consumer/find_package "$work/find_package" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON
step "consumer pkg-config (shared)" pkg_config_shared
step "consumer pkg-config (static)" pkg_config_static
step "consumer pkg-config (C++ compile of the header)" pkg_config_cxx
step "consumer add_subdirectory (shared, static)" \
  cmake_consumer tests/consumer/add_subdirectory "$work/add_subdirectory" \
  -DPOSENC_SOURCE_DIR="$src"
echo "posenc: every consumer passed"
