#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_api (fuzz/corpus/): for each of the sixteen kernel families
(byte 0: 0 rope, 1 sinusoid fill, 2 sinusoid timesteps, 3 sinusoid add, 4 alibi add,
5 alibi bias, 6 learned, 7 alibi softmax f32, 8 alibi softmax bf16, 9 rope bf16, 10 rope
f16, 11-13 sinusoid fill / timesteps / add and 14-15 alibi add / bias on bf16 or f16 rows
(the byte after misc picks the type)), three inputs the
library accepts and three it rejects (one of those a NULL tensor or a misaligned pointer),
chosen among deterministic pseudo-random candidates by running them through the built
target (POSENC_FUZZ_VERBOSE=1 prints each input's family and scalar status). The target's
cursor reader decodes the bytes after the family into shapes, strides, flags, positions,
parameters and data (past the end: zeros, and PRNG data). Usage: fuzz/make_corpus.py <fuzz_api binary> [out-dir]"""
import os
import random
import re
import subprocess
import sys
import tempfile

binary = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "corpus")
names = ["rope", "sin_fill", "sin_timesteps", "sin_add", "alibi_add", "alibi_bias", "learned",
         "alibi_softmax", "alibi_softmax_bf16", "rope_bf16", "rope_f16", "sin_fill16",
         "sin_timesteps16", "sin_add16", "alibi_add16", "alibi_bias16"]
rng = random.Random(20261129)


def candidate(family, misc):
    # Low bytes mostly pick the common branch of a selector; any byte may pick a special one.
    tame = rng.choice([0.98, 0.95, 0.9, 0.8])
    body = [rng.randrange(4, 8) if rng.random() < tame else rng.randrange(256)
            for _ in range(rng.randrange(12, 64))]
    data = [rng.randrange(256) for _ in range(rng.randrange(0, 200))]
    return bytes([family, misc] + body + data)


def status(blob):
    with tempfile.NamedTemporaryFile(delete=False) as fh:
        fh.write(blob)
    try:
        run = subprocess.run([binary, fh.name], env=dict(os.environ, POSENC_FUZZ_VERBOSE="1"),
                             capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(fh.name)
    m = re.search(r"family (\d+) status (\d+)", run.stderr)
    if run.returncode != 0 or not m:
        return None  # skipped by the decoder, or a finding: not a seed
    return int(m.group(2))


os.makedirs(out, exist_ok=True)
written = 0
for family, name in enumerate(names):
    want = {"ok": 3, "error": 2, "error-null-or-misaligned": 1}
    for _ in range(5000):
        if not any(want.values()):
            break
        special = want["error-null-or-misaligned"] and rng.random() < 0.3
        misc = rng.choice([0, 1]) if special else rng.choice([4, 5, 6, 7])
        blob = candidate(family, misc)
        st = status(blob)
        kind = None if st is None else ("ok" if st == 0 else
                                        ("error-null-or-misaligned" if special else "error"))
        if kind and want[kind]:
            want[kind] -= 1
            path = os.path.join(out, f"{family}-{name}-{kind}-{want[kind]}")
            with open(path, "wb") as fh:
                fh.write(blob)
            written += 1
print(f"make_corpus: wrote {written} files to {out}")
