#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_api (fuzz/corpus/): for each of the twenty kernel families
(byte 0: 0 rope, 1 sinusoid fill, 2 sinusoid timesteps, 3 sinusoid add, 4 alibi add,
5 alibi bias, 6 learned, 7 alibi softmax f32, 8 alibi softmax bf16, 9 rope bf16, 10 rope
f16, 11-13 sinusoid fill / timesteps / add and 14-15 alibi add / bias on bf16 or f16 rows,
16 mrope f32, 17 mrope on bf16 or f16, 18 rope rerotate f32, 19 rope rerotate on bf16 or
f16 (for 11-15, 17 and 19 the byte after misc picks the type)), three inputs the
library accepts and three it rejects (one of those a NULL tensor or a misaligned pointer),
chosen among deterministic pseudo-random candidates by running them through the built
target (POSENC_FUZZ_VERBOSE=1 prints each input's family and scalar status). The target's
cursor reader decodes the bytes after the family into shapes, strides, flags, positions,
parameters and data (past the end: zeros, and PRNG data).
Usage: fuzz/make_corpus.py <fuzz_api binary> [out-dir [family...]]
With families given (numbers), only their seeds are written: the committed seeds of the
other families are kept (this script does not reproduce them byte for byte; families 16-19
were added with `fuzz/make_corpus.py <binary> fuzz/corpus 16 17 18 19`)."""
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
         "sin_timesteps16", "sin_add16", "alibi_add16", "alibi_bias16", "mrope", "mrope16",
         "rerotate", "rerotate16"]
only = {int(f) for f in sys.argv[3:]}
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
    if only and family not in only:
        continue
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

# Hand-written seeds of the M-RoPE and re-rotation families, byte by byte in fuzz_api.c's
# decode order (after them the reader gives zeros and the tensor data comes from the PRNG).
PLAN_128 = [64, 4, 0, 1]  # decode_rope_plan_new: rotary_dim 128, base path, att 1, base 1e4
VIEWS = [1, 20, 2, 1, 1, 0, 0, 0]  # D = R, 20 tokens, 2 q heads, 1 k head, [L, H, D], offset 0
# mrope_positions_of: start 0; text 0-2; an image (T 1, H 2, W 3) at 3; a video (T 2, H 2,
# W 2) at 6; text 8-10 (Qwen2-VL's get_rope_index).
QWEN_POSITIONS = [2, 0] + [0, 0, 0] + [2, 1, 2] + [10, 1, 1] + [0, 0, 0]
handmade = {
    # contiguous sections [16, 24, 24] (Qwen2-VL's mrope_section)
    "16-mrope-hand-qwen2vl": [16, 4] + PLAN_128 + VIEWS + [0, 4] + QWEN_POSITIONS,
    # sections that sum to R/2 only modulo 2^64: must fail
    "16-mrope-hand-error-sections-wrap": [16, 4] + PLAN_128 + VIEWS + [0, 2, 5] + QWEN_POSITIONS,
    # f16, GPTJ | MROPE_INTERLEAVED, sections [24, 20, 20] (Qwen3-VL's)
    "17-mrope16-hand-qwen3vl-f16-gptj": [17, 4, 1] + PLAN_128 + VIEWS + [3, 20] + QWEN_POSITIONS,
    # the same plan (to = from), positions 100-129 to 90-119: a context shift
    "18-rerotate-hand-context-shift": [18, 4] + PLAN_128 + [0] + [1, 30, 2, 1, 1, 0, 0, 0] + [0]
    + [1, 8, 100, 0] + [0] * 30 + [0, 4, 10] + [8, 0, 0],
    # to: the frequencies halved (linear scaling 2), att 2 (r = 2); GPTJ; packed rows, 3
    # heads at offset 1; the run 131077.. to itself
    "18-rerotate-hand-linear-scaling": [18, 4] + PLAN_128 + [2, 1, 4, 16]
    + [1, 12, 3, 0, 0, 2, 1] + [1] + [0, 6, 5] + [1],
    # F32_ANGLES, from: w = 1024 at 2^31 - 1; to: w' = 1 at 3 (a float32-recipe angle of
    # 2^41 rad: fuzz_api.c's known issue, compared with POSENC_FUZZ_STRICT=1); u = 1, v = 0
    "18-rerotate-hand-f32-angles-beyond-2p32": [18, 4] + [1, 3, 0, 34] + [2, 3, 0, 0]
    + [1, 1, 1, 0, 0, 0, 0, 0] + [8] + [1, 1, 0] + [2, 1, 8, 3, 0, 0] + [0, 0, 0, 0]
    + [0, 8, 0, 0],
    # to: rotary_dim 126: must fail
    "18-rerotate-hand-error-rotary-dim": [18, 4] + PLAN_128 + [7, 6] + VIEWS + [0] + [0, 8, 0, 0]
    + [1],
    # bf16, rotary_dim 80; to: the same frequencies in another plan, att 1e-30 (r = 1e-30);
    # positions -16..-1 to 2^31 - 16..: p' - p = 2^31, past int32
    "19-rerotate16-hand-bf16-delta-past-int32": [19, 4, 0] + [40, 4, 0, 1] + [5, 5]
    + [1, 16, 4, 2, 1, 0, 2, 1] + [0] + [1, 5, 16, 0] + [0] * 16 + [0, 1, 0] + [8, 0, 0],
    # bf16, rotary_dim 40; to: att FLT_MIN (r = FLT_MIN, the least accepted); run 0.. to 50..
    "19-rerotate16-hand-r-flt-min": [19, 4, 0] + [20, 4, 0, 1] + [7, 4]
    + [1, 8, 2, 0, 0, 0, 0, 0] + [0] + [0, 8, 0, 0] + [2, 1, 8, 50, 0],
}
for name, blob in handmade.items():
    if only and int(name.split("-")[0]) not in only:
        continue
    with open(os.path.join(out, name), "wb") as fh:
        fh.write(bytes(blob))
    written += 1
print(f"make_corpus: wrote {written} files to {out}")
