#!/usr/bin/env bash
# Installs the Debian packages posenc needs, if any is missing. Non-interactive; safe to run
# again. Usage: scripts/install-deps.sh [--aarch64] [--riscv64] [--emulation] [--sanitizers]
#   [--format] [--plots] [--python]
#   (no option)  build, test and benchmark natively
#   --aarch64    also the aarch64 cross build and its tests under qemu-aarch64: Debian's
#                cross compilers, qemu-user, GoogleTest's sources (built for the target), and
#                libsleef-dev, libc6, libstdc++6 and libgomp1 (the OpenMP example) for arm64
#                through multiarch (the arm64 architecture is added): the emulated programs
#                run on those
#   --riscv64    also the riscv64 cross build and its tests under qemu-riscv64
#                (scripts/test-riscv64.sh): clang-16 (the RVV intrinsics), Debian's riscv64
#                cross compilers and sysroot, qemu-user, GoogleTest's sources, and the archive
#                keyring with which that script fetches Debian 13's riscv64 SLEEF
#   --emulation  also qemu-user, to run the x86 suite on emulated CPU models
#   --sanitizers also clang and its runtimes (ASan/UBSan/MSan/TSan, libFuzzer), and
#                GoogleTest's sources (the MSan build compiles them instrumented), for
#                scripts/test-sanitizers.sh, test-tsan.sh and test-fuzz.sh
#   --format     also clang-format (scripts/test.sh checks the sources' format)
#   --plots      also Python 3 with matplotlib (Debian's python3-matplotlib), with which
#                posenc-report draws its plots (scripts/report.sh)
#   --python     also Debian's Python 3 with venv, NumPy and PyTorch (python3-torch, CPU
#                only: no GPU packages), for the Python package's tests (scripts/test-python.sh)
set -euo pipefail

packages=(cmake ninja-build gcc g++ pkg-config libsleef-dev libbenchmark-dev libgtest-dev)
multiarch=""
for option in "$@"; do
  case "$option" in
    --aarch64)
      packages+=(qemu-user gcc-aarch64-linux-gnu g++-aarch64-linux-gnu googletest
                 libsleef-dev:arm64 libc6:arm64 libstdc++6:arm64 libgomp1:arm64)
      multiarch=arm64 ;;
    --riscv64)
      packages+=(qemu-user clang-16 gcc-riscv64-linux-gnu g++-riscv64-linux-gnu googletest
                 debian-archive-keyring) ;;
    --emulation) packages+=(qemu-user) ;;
    --sanitizers) packages+=(clang libclang-rt-14-dev googletest) ;;
    --format) packages+=(clang-format) ;;
    --plots) packages+=(python3-matplotlib) ;;
    --python) packages+=(python3 python3-venv python3-pip python3-numpy python3-torch) ;;
    *) echo "usage: $0 [--aarch64] [--riscv64] [--emulation] [--sanitizers] [--format] [--plots]" \
         "[--python]" >&2
       exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "posenc: installing missing packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if [ -n "$multiarch" ] && ! dpkg --print-foreign-architectures | grep -qx "$multiarch"; then
  $sudo dpkg --add-architecture "$multiarch"
fi
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
