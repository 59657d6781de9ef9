#!/usr/bin/env python3
"""The (test, ISA) pairs a build's ctest suite runs, for comparing two versions of the suite.

Runs every test of `ctest --test-dir BUILD` the way ctest would (its command and environment
properties, from `ctest --show-only=json-v1`), each GoogleTest binary with a JSON report, and
prints one line per pair: `<state> <binary> <Suite.Test> <isa>`, sorted and without
repetitions. The ISA of a parameterised instance (Isa/<Fixture>.<Test>/<isa>) is its
parameter; any other test's is the process's POSENC_ISA ("auto" when unset or empty). States:
`ran` (passed), `FAILED`, `skipped` (GTEST_SKIP, by name), `process-skipped` (the process
exited with the skip code: the forced ISA is missing on this CPU; the test name is `*`).
Tests that are not GoogleTest binaries (examples, the report's test) are listed by their ctest
name with state ran/FAILED/skipped and ISA `-`.

Usage: scripts/ctest-pairs.py BUILD > pairs.txt
       diff <(grep '^ran' before.txt) <(grep '^ran' after.txt)
(The comparison in the closing note of the CI issue: every `ran` pair of the old suite is a
`ran` pair of the new one.)
"""

import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile


def ctest_tests(build):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["tests"]


def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


def environment(props):
    env = dict(os.environ)
    env.pop("POSENC_ISA", None)
    for item in props.get("ENVIRONMENT_MODIFICATION", []):  # NAME=op:value
        name, rest = item.split("=", 1)
        op, value = rest.split(":", 1)
        if op == "unset":
            env.pop(name, None)
        elif op == "set":
            env[name] = value
    for item in props.get("ENVIRONMENT", []):
        name, value = item.split("=", 1)
        env[name] = value
    return env


def gtest_binary(command):
    """The GoogleTest binary a ctest command runs (directly or through launch.sh), or None."""
    for part in command:
        if part.endswith("_test") and os.path.isfile(part) and os.access(part, os.X_OK):
            return part
    return None


def run(test):
    props = properties(test)
    env = environment(props)
    isa = env.get("POSENC_ISA") or "auto"
    skip_code = int(props.get("SKIP_RETURN_CODE", -1))
    command = test["command"]
    name = test["name"]
    binary = gtest_binary(command)
    if binary is None:
        rc = subprocess.run(command, env=env, cwd=props.get("WORKING_DIRECTORY"),
                            capture_output=True).returncode
        state = "ran" if rc == 0 else "skipped" if rc == skip_code else "FAILED"
        return [(state, name, name, "-")]
    binary = os.path.basename(binary)
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        env["GTEST_OUTPUT"] = "json:" + report
        rc = subprocess.run(command, env=env, cwd=props.get("WORKING_DIRECTORY"),
                            capture_output=True).returncode
        if rc == skip_code:
            return [("process-skipped", binary, "*", isa)]
        if not os.path.exists(report):
            return [("FAILED", binary, "* (no report, exit %d)" % rc, isa)]
        with open(report) as f:
            data = json.load(f)
    pairs = []
    for suite in data["testsuites"]:
        for case in suite["testsuite"]:
            if case.get("status") != "RUN":
                continue
            full = suite["name"] + "." + case["name"]
            pair_isa = isa
            if suite["name"].startswith("Isa/"):
                full, pair_isa = full.rsplit("/", 1)
            if case.get("failures"):
                state = "FAILED"
            elif case.get("result") == "SKIPPED":
                state = "skipped"
            else:
                state = "ran"
            pairs.append((state, binary, full, pair_isa))
    return pairs


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    tests = ctest_tests(argv[0])
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(run, tests))
    pairs = sorted({p for r in results for p in r})
    for p in pairs:
        print(" ".join(p))
    return 1 if any(p[0] == "FAILED" for p in pairs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
