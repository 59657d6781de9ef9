#!/usr/bin/env bash
# Packaging test: installs posenc into a temporary prefix from a build that is already
# configured in the build directory (scripts/test.sh passes the native suite's build, so
# nothing is compiled again), or else from a Release build of the libraries and posenc-info
# made there, and builds and runs tests/consumer/consumer.c outside the source tree in every
# way an integrator links it: find_package (shared and static; the shared one also installed),
# pkg-config (shared and static), add_subdirectory of the source tree (shared and static).
# Every program runs with LD_LIBRARY_PATH unset, as a user's would. Also checks that the
# installed libposenc.so exports only posenc_ symbols, that the installed CMake package names
# no path of this machine's build, that the installed posenc-info runs from the prefix, what
# the README says about the prefix being off the loader's path (a pkg-config consumer without
# an RPATH fails with "libposenc.so.0: cannot open shared object file" and runs with
# LD_LIBRARY_PATH), and that a static consumer still needs libsleef.so.3 at run time
# (Debian ships no libsleef.a). One line per step; exits non-zero on the first failure, with
# that step's log.
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

# Runs a consumer as a user would: LD_LIBRARY_PATH unset.
run() {
  env -u LD_LIBRARY_PATH "$@"
}

# A program linked against the static library must not need libposenc.so. SLEEF comes from
# libsleef.so.3 even then when the linker finds no libsleef.a (Debian has none), so the
# program needs it at run time (README, "Install and link").
not_needing_shared() {
  readelf -d "$1" | grep NEEDED
  run "$1" && ! readelf -d "$1" | grep -q 'NEEDED.*libposenc' || return 1
  if [ "$("$cc" -print-file-name=libsleef.a)" = libsleef.a ]; then
    run ldd "$1" | grep 'libsleef\.so\.3 => /' || { echo "no libsleef.so.3 needed"; return 1; }
  fi
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
    cmake --build "$bin" -j "$jobs" && run "$bin/consumer_shared" &&
    not_needing_shared "$bin/consumer_static"
}

# The find_package consumer runs from its build tree (CMake's build RPATH, checked above)
# and, installed, through INSTALL_RPATH_USE_LINK_PATH (tests/consumer/find_package).
cmake_consumer_installed() {
  local bin=$work/find_package
  cmake --install "$bin" --prefix "$bin/installed" &&
    readelf -d "$bin/installed/bin/consumer_shared" | grep -E 'R(UN)?PATH.*'"$prefix" &&
    run "$bin/installed/bin/consumer_shared"
}

# The installed posenc-info runs from the prefix and takes the installed libposenc.so.0
# (its RPATH is $ORIGIN-relative: tools/CMakeLists.txt).
installed_info() {
  local info
  info=$(find "$prefix" -name posenc-info -type f | head -n 1)
  [ -n "$info" ] || { echo "posenc-info not installed"; return 1; }
  readelf -d "$info" | grep -E 'R(UN)?PATH'
  run ldd "$info" | grep "libposenc\.so\.0 => $prefix/" &&
    run "$info" | tee "$work/posenc-info.txt" &&
    grep -q "^posenc $version " "$work/posenc-info.txt"
}

pkg_config_shared() {
  local libdir
  libdir=$(pkg-config --variable=libdir posenc)
  # shellcheck disable=SC2046
  "$cc" "${strict[@]}" tests/consumer/consumer.c -o "$work/pc_shared" \
    $(pkg-config --cflags --libs posenc) -lm -Wl,-rpath,"$libdir" &&
    run "$work/pc_shared" && readelf -d "$work/pc_shared" | grep -q 'NEEDED.*libposenc\.so\.0'
}

# The same without -Wl,-rpath (README, "Run time"): in a prefix off the loader's path it fails
# with the documented message (checked unless this machine has a libposenc.so.0 on the
# loader's path: then ldd says where), and runs with LD_LIBRARY_PATH.
pkg_config_shared_no_rpath() {
  local libdir err=$work/pc_shared_no_rpath.err
  libdir=$(pkg-config --variable=libdir posenc)
  # shellcheck disable=SC2046
  "$cc" "${strict[@]}" tests/consumer/consumer.c -o "$work/pc_shared_no_rpath" \
    $(pkg-config --cflags --libs posenc) -lm || return 1
  if run ldd "$work/pc_shared_no_rpath" | grep 'libposenc\.so\.0 => /'; then
    echo "a libposenc.so.0 is on the loader's path: the failure without LD_LIBRARY_PATH is not checked"
  elif run "$work/pc_shared_no_rpath" 2>"$err"; then
    echo "ran without an RPATH or LD_LIBRARY_PATH"
    return 1
  else
    cat "$err"
    grep -q 'libposenc\.so\.0: cannot open shared object file' "$err" || return 1
  fi
  LD_LIBRARY_PATH="$libdir" "$work/pc_shared_no_rpath"
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
    run "$work/pc_cxx"
}

scripts/install-deps.sh
if [ ! -f "$build/CMakeCache.txt" ]; then
  step "posenc build (Release, libraries and posenc-info)" \
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON \
    -DPOSENC_BUILD_TESTS=OFF -DPOSENC_BUILD_BENCH=OFF -DPOSENC_BUILD_TOOLS=ON \
    -DPOSENC_BUILD_EXAMPLES=OFF -DPOSENC_INSTALL=ON
fi
# posenc-info is installed with the libraries where the build has the tools (the default).
targets=(posenc posenc_static)
tools=0
if grep -q '^POSENC_BUILD_TOOLS:BOOL=ON$' "$build/CMakeCache.txt"; then
  targets+=(posenc-info)
  tools=1
fi
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
step "posenc compile (up to date when the build is reused)" \
  cmake --build "$build" -j "$jobs" --target "${targets[@]}"
step "posenc install into $prefix" cmake --install "$build" --prefix "$prefix"

libposenc=$(find "$prefix" -name 'libposenc.so' | head -n 1)
pcdir=$(dirname "$(find "$prefix" -name posenc.pc | head -n 1)")
export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
step "installed libposenc.so exports only posenc_ symbols" only_posenc_symbols "$libposenc"
step "installed CMake package names no build-machine path" no_build_paths
if [ "$tools" = 1 ]; then
  step "installed posenc-info runs from the prefix (no LD_LIBRARY_PATH)" installed_info
else
  echo "installed posenc-info: skipped ($build has POSENC_BUILD_TOOLS=OFF)"
fi

step "consumer find_package (shared, static)" \
  cmake_consumer tests/consumer/find_package "$work/find_package" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON
step "consumer find_package (shared), installed: INSTALL_RPATH_USE_LINK_PATH" \
  cmake_consumer_installed
step "consumer pkg-config (shared, -Wl,-rpath)" pkg_config_shared
step "consumer pkg-config (shared, no rpath: fails; runs with LD_LIBRARY_PATH)" \
  pkg_config_shared_no_rpath
step "consumer pkg-config (static; libsleef.so.3 still needed)" pkg_config_static
step "consumer pkg-config (C++ compile of the header)" pkg_config_cxx
step "consumer add_subdirectory (shared, static)" \
  cmake_consumer tests/consumer/add_subdirectory "$work/add_subdirectory" \
  -DPOSENC_SOURCE_DIR="$src"
echo "posenc: every consumer passed"
