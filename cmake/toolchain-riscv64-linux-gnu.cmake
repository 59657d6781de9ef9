# Cross build for riscv64 Linux from a Debian 12 host: clang-16 for C (Debian 12's
# gcc-riscv64-linux-gnu 12 has no RVV intrinsics; clang 16 has them, `__riscv_` prefixed),
# Debian's riscv64-linux-gnu-g++ for C++ (GoogleTest and the tests: only C++ code, none of
# it vector code), both on the cross sysroot /usr/riscv64-linux-gnu (bookworm's glibc 2.36)
# and GNU binutils. Tests run under qemu-riscv64 (qemu-user) with that sysroot as its -L
# prefix; the CPU model comes from the environment (QEMU_CPU, e.g.
# rv64,v=true,vlen=256,elen=64,vext_spec=v1.0; without V the dispatcher picks scalar).
# SLEEF is not in Debian 12 for riscv64: scripts/test-riscv64.sh unpacks Debian 13's
# libsleef-dev / libsleef3 (riscv64) into the build directory and passes SLEEF_INCLUDE_DIR
# and SLEEF_LIBRARY (the build tree's RUNPATH finds libsleef.so.3 there at run time):
#   cmake -S . -B build-riscv64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-riscv64-linux-gnu.cmake \
#     -DSLEEF_INCLUDE_DIR=... -DSLEEF_LIBRARY=...
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER clang-16)
set(CMAKE_C_COMPILER_TARGET riscv64-linux-gnu)
set(CMAKE_CXX_COMPILER riscv64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE riscv64-linux-gnu)

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-riscv64 -L /usr/riscv64-linux-gnu)

# Headers and libraries of the target only; programs of the host.
set(CMAKE_FIND_ROOT_PATH /usr/riscv64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
