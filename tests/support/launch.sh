#!/bin/sh
# Runs one test binary, under $POSENC_TEST_EMULATOR when it is set (word-split on purpose:
# e.g. "qemu-x86_64 -cpu Haswell"), so that scripts/test-emulated-x86.sh can run the native
# suite on an emulated CPU without rebuilding it.
exec ${POSENC_TEST_EMULATOR} "$@"
