#!/usr/bin/env bash
# Checks the variant check of scripts/variant-check.sh (the few tests test-emulated-x86.sh
# runs per ISA on an emulated CPU model whose ISAs this host also runs natively): in a gcov
# build (gcc
# --coverage), for every x86 ISA this host has, runs every suite's process for that ISA and
# then the variant check's tests alone, and compares what each executes in that ISA's kernel
# objects (kernels/*_<isa>.c with the SIMD bodies and vector layers they include): every
# function (kernel variants, and each helper a variant instantiates) the suites execute must
# be executed by the check; lines the check leaves out are counted and listed. Not part of
# CI (about 3 minutes of build and 2 of runs on 2 cores); run it when tests or kernels change.
# Exits non-zero when the check misses a function.
# Usage: scripts/check-emulated-variants.sh [build-dir]   (default: build-cov-variants)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cov-variants}

scripts/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=gcc \
  -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_FLAGS=--coverage -DCMAKE_CXX_FLAGS=--coverage \
  -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage \
  -DPOSENC_BUILD_BENCH=OFF -DPOSENC_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
# The check's tests and suites.
# shellcheck source=scripts/variant-check.sh
source scripts/variant-check.sh
isas=$("$build/tools/posenc-info" | sed -n 's/^ *available *//p')
export POSENC_BUILD=$build POSENC_SUITES=$variant_suites POSENC_FILTER=$variant_filter
export POSENC_ISAS=$isas
python3 - <<'EOF'
import glob, os, re, subprocess, sys

build = os.environ["POSENC_BUILD"]
objects = os.path.join(build, "CMakeFiles/posenc_objects.dir/kernels")
suites = os.environ["POSENC_SUITES"].split("|")
binaries = sorted(b for b in glob.glob(os.path.join(build, "tests/*_test"))
                  if not b.endswith(("/isa_fallback_test", "/dispatch_rules_test")))


def run(isa, filt):
    for g in glob.glob(os.path.join(build, "**/*.gcda"), recursive=True):
        os.remove(g)
    for b in binaries:
        if filt is not None and os.path.basename(b)[:-5] not in suites:
            continue
        env = dict(os.environ, POSENC_ISA=isa)
        env.pop("GTEST_FILTER", None)
        if filt is not None:
            env["GTEST_FILTER"] = filt
        if subprocess.run([b], env=env, capture_output=True).returncode != 0:
            sys.exit("%s failed with POSENC_ISA=%s" % (b, isa))
    functions, lines = set(), set()
    for g in glob.glob(os.path.join(objects, "*_%s.c.gcda" % isa)):
        obj = os.path.basename(g)[:-len(".c.gcda")]
        out = subprocess.run(["gcov", "-f", "-n", os.path.basename(g)], cwd=objects,
                             capture_output=True, text=True).stdout
        name = None
        for line in out.splitlines():
            m = re.match(r"Function '(.*)'", line)
            if m:
                name = m.group(1)
            elif name and line.startswith("Lines executed:"):
                if not line.startswith("Lines executed:0.00%"):
                    functions.add((obj, name))
                name = None
        out = subprocess.run(["gcov", "-t", os.path.basename(g)], cwd=objects,
                             capture_output=True, text=True).stdout
        source = None
        for line in out.splitlines():
            m = re.match(r"\s*-:\s*0:Source:(.*)", line)
            if m:
                source = m.group(1)
                continue
            m = re.match(r"\s*([^:]+):\s*(\d+):", line)
            if m and source and not source.startswith("/usr/"):
                count = m.group(1).strip()
                if count not in ("-", "#####", "=====") and not count.startswith("$$$$$"):
                    lines.add((obj, os.path.relpath(source), int(m.group(2))))
    return functions, lines


missed_any = False
for isa in os.environ["POSENC_ISAS"].split():
    suite_fn, suite_lines = run(isa, None)
    check_fn, check_lines = run(isa, os.environ["POSENC_FILTER"])
    missed_fn = sorted(suite_fn - check_fn)
    missed_lines = sorted(suite_lines - check_lines)
    print("%s: the suites execute %d functions and %d lines of its kernel objects; the variant "
          "check %d of those functions and %d of those lines"
          % (isa, len(suite_fn), len(suite_lines), len(suite_fn & check_fn),
             len(suite_lines & check_lines)))
    for obj, name in missed_fn:
        print("  function not executed by the check: %s in %s" % (name, obj))
    for obj, source, n in missed_lines:
        print("  line not executed by the check: %s:%d (in %s)" % (source, n, obj))
    missed_any = missed_any or bool(missed_fn)
sys.exit(1 if missed_any else 0)
EOF
