#!/usr/bin/env bash
# Every function posenc exports, and every kernel variant the dispatch table names, is
# defined literally (its full name at the start of a definition in a .c file), so that
# `git grep <name>` finds it: no name may be made by token pasting. Reads the names from a
# built libposenc.so (exported) and the one variant list, kernels/variants.h (variants:
# X(kernel, ISA, posenc_<kernel>_<isa>)). Also the converse: every variant a kernels/<op>_<isa>.c
# source defines is in the list (a variant missing from it would never be dispatched).
# Usage: scripts/check-names.sh <build-dir>
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: $0 <build-dir>}
lib=$build/libposenc.so
names=$( (nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}'
  sed -n 's/^ *X([a-z0-9_]*, [A-Z0-9]*, \(posenc_[a-z0-9_]*\)).*/\1/p' kernels/variants.h) |
  sort -u)
missing=0 count=0
for name in $names; do
  count=$((count + 1))
  if ! git grep -qE "^[a-z_][a-z0-9_ *]* \**${name}\(" -- '*.c'; then
    echo "check-names: no literal definition of $name in the .c sources"
    missing=$((missing + 1))
  fi
done
echo "check-names: $count names (exported functions and kernel variants), $missing without a literal definition"
unlisted=0
for name in $(git grep -hoE "^void posenc_[a-z0-9_]+\(const [a-z0-9_]+_args \*" -- 'kernels/*_*.c' |
  sed 's/^void \(posenc_[a-z0-9_]*\)(.*/\1/' | sort -u); do
  if ! grep -qE "^ *X\([a-z0-9_]+, [A-Z0-9]+, ${name}\)" kernels/variants.h; then
    echo "check-names: $name is defined in kernels/ but not in the list (kernels/variants.h)"
    unlisted=$((unlisted + 1))
  fi
done
echo "check-names: $unlisted variants defined in kernels/ but missing from kernels/variants.h"
[ "$missing" -eq 0 ] && [ "$unlisted" -eq 0 ]
