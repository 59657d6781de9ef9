#!/usr/bin/env bash
# Every function posenc exports, and every kernel variant the dispatch table names, is
# defined literally (its full name at the start of a definition in a .c file), so that
# `git grep <name>` finds it: no name may be made by token pasting. Reads the names from a
# built libposenc.so (exported) and kernels/variants.h (variants).
# Usage: scripts/check-names.sh <build-dir>
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: $0 <build-dir>}
lib=$build/libposenc.so
names=$( (nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}'
  sed -n 's/^void \(posenc_[a-z0-9_]*\)(.*/\1/p' kernels/variants.h) | sort -u)
missing=0 count=0
for name in $names; do
  count=$((count + 1))
  if ! git grep -qE "^[a-z_][a-z0-9_ *]* \**${name}\(" -- '*.c'; then
    echo "check-names: no literal definition of $name in the .c sources"
    missing=$((missing + 1))
  fi
done
echo "check-names: $count names (exported functions and kernel variants), $missing without a literal definition"
[ "$missing" -eq 0 ]
