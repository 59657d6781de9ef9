# Cross build for aarch64 Linux with Debian's gcc-aarch64-linux-gnu; tests run under
# qemu-aarch64 (qemu-user), libraries from Debian's arm64 multiarch packages
# (libsleef-dev:arm64). scripts/test-aarch64.sh installs all of it and uses this file:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Programs run on Debian's arm64 loader and runtime libraries (multiarch: libc6:arm64,
# libstdc++6:arm64, libsleef3:arm64), found at their usual paths. Not `-L
# /usr/aarch64-linux-gnu`: with that prefix, a forked child (GoogleTest's death tests) spins
# forever under qemu 7.2.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)

# Headers and libraries of the target only; programs of the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
