#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/): for each family of
each target (byte 0 of an input picks the family within its target, see FAMILIES;
fuzz_learned and fuzz_softmax have one family and no such byte), three inputs the library
accepts and three it rejects (one of those a NULL tensor or a misaligned pointer), chosen
among deterministic pseudo-random candidates by running them through the built target
(POSENC_FUZZ_VERBOSE=1 prints each input's family and scalar status), and the hand-written
seeds below. For the families stored in bf16 or f16 the byte after misc picks the type.
The targets' cursor readers decode the bytes after misc into shapes, strides, flags,
positions, parameters and data (past the end: zeros, and PRNG data).
Usage: fuzz/make_corpus.py <dir of the built targets> [out-dir [target...]]
(e.g. build-fuzz/fuzz; out-dir defaults to fuzz/corpus.) With targets given, only their seeds
are written. fuzz_rope_kv (QK-norm, slots, q8_0, fp8), fuzz_mrope's ggml M-RoPE seeds and
fuzz_softmax's batched seeds were written by this script as it is. This script does not reproduce the committed seeds byte for byte (they were
split from the single fuzz_api target's corpus, byte 0 renumbered; the M-RoPE and
re-rotation families were added with its predecessor's `... 16 17 18 19`)."""
import os
import random
import re
import subprocess
import sys
import tempfile

bindir = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "corpus")
# Each target's families in the order of byte 0 (as its decode() reads it).
FAMILIES = {
    "fuzz_rope": ["rope", "rope_bf16", "rope_f16"],
    "fuzz_mrope": ["mrope", "mrope16"],
    "fuzz_rerotate": ["rerotate", "rerotate16"],
    "fuzz_rope_views": ["rope_out", "mrope_out", "rope_factors", "mrope_factors"],
    "fuzz_rope_kv": ["qknorm", "slots", "q8_0", "fp8"],
    "fuzz_sinusoid": ["sin_fill", "sin_timesteps", "sin_add", "sin_fill16", "sin_timesteps16",
                      "sin_add16"],
    "fuzz_alibi": ["alibi_add", "alibi_bias", "alibi_softmax", "alibi_softmax_bf16",
                   "alibi_add16", "alibi_bias16"],
    "fuzz_learned": ["learned"],
    "fuzz_softmax": ["softmax"],
}
only = set(sys.argv[3:])
rng = random.Random(20261129)


def selector(target, family):
    """Byte 0 of the target's inputs (none for a target with one family)."""
    return [family] if len(FAMILIES[target]) > 1 else []


def candidate(target, family, misc):
    # Low bytes mostly pick the common branch of a selector; any byte may pick a special one.
    tame = rng.choice([0.98, 0.95, 0.9, 0.8])
    body = [rng.randrange(4, 8) if rng.random() < tame else rng.randrange(256)
            for _ in range(rng.randrange(12, 64))]
    data = [rng.randrange(256) for _ in range(rng.randrange(0, 200))]
    return bytes(selector(target, family) + [misc] + body + data)


def status(target, blob):
    with tempfile.NamedTemporaryFile(delete=False) as fh:
        fh.write(blob)
    try:
        run = subprocess.run([os.path.join(bindir, target), fh.name],
                             env=dict(os.environ, POSENC_FUZZ_VERBOSE="1"),
                             capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(fh.name)
    m = re.search(r"family (\d+) status (\d+)", run.stderr)
    if run.returncode != 0 or not m:
        return None  # skipped by the decoder, or a finding: not a seed
    return int(m.group(2))


def write(target, name, blob):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as fh:
        fh.write(blob)


written = 0
for target, names in FAMILIES.items():
    if only and target not in only:
        continue
    for family, name in enumerate(names):
        want = {"ok": 3, "error": 2, "error-null-or-misaligned": 1}
        for _ in range(5000):
            if not any(want.values()):
                break
            special = want["error-null-or-misaligned"] and rng.random() < 0.3
            misc = rng.choice([0, 1]) if special else rng.choice([4, 5, 6, 7])
            blob = candidate(target, family, misc)
            st = status(target, blob)
            kind = None if st is None else ("ok" if st == 0 else
                                            ("error-null-or-misaligned" if special else "error"))
            if kind and want[kind]:
                want[kind] -= 1
                prefix = "".join(f"{b}-" for b in selector(target, family))
                write(target, f"{prefix}{name}-{kind}-{want[kind]}", blob)
                written += 1

# Hand-written seeds of fuzz_mrope and fuzz_rerotate, byte by byte in their decode order
# (after them the reader gives zeros and the tensor data comes from the PRNG).
PLAN_128 = [64, 4, 0, 1]  # decode_rope_plan_new: rotary_dim 128, base path, att 1, base 1e4
VIEWS = [1, 20, 2, 1, 1, 0, 0, 0]  # D = R, 20 tokens, 2 q heads, 1 k head, [L, H, D], offset 0
# mrope_positions_of: start 0; text 0-2; an image (T 1, H 2, W 3) at 3; a video (T 2, H 2,
# W 2) at 6; text 8-10 (Qwen2-VL's get_rope_index).
QWEN_POSITIONS = [2, 0] + [0, 0, 0] + [2, 1, 2] + [10, 1, 1] + [0, 0, 0]
HANDMADE = {
    "fuzz_mrope": {
        # contiguous sections [16, 24, 24] (Qwen2-VL's mrope_section)
        "0-mrope-hand-qwen2vl": [0, 4] + PLAN_128 + VIEWS + [0, 4] + QWEN_POSITIONS,
        # sections that sum to R/2 only modulo 2^64: must fail
        "0-mrope-hand-error-sections-wrap": [0, 4] + PLAN_128 + VIEWS + [0, 2, 5]
        + QWEN_POSITIONS,
        # f16, GPTJ | MROPE_INTERLEAVED, sections [24, 20, 20] (Qwen3-VL's)
        "1-mrope16-hand-qwen3vl-f16-gptj": [1, 4, 1] + PLAN_128 + VIEWS + [3, 20]
        + QWEN_POSITIONS,
        # POSENC_ROPE_MROPE_GGML (flags bit 5): ggml's sections {16, 24, 24, 0}, e row 0
        "0-mrope-hand-ggml-qwen2vl": [0, 4] + PLAN_128 + VIEWS + [32, 0, 0] + QWEN_POSITIONS
        + [0],
        # a plan of posenc_rope_plan_create_ggml_mode, mode 8 (MROPE), the same sections
        "0-mrope-hand-ggml-mode8-plan": [0, 4] + PLAN_128 + VIEWS + [32, 0, 3] + QWEN_POSITIONS
        + [0],
        # bf16, mode 40 (IMROPE) with Qwen3-VL's {24, 20, 20, 0}, e row = t
        "1-mrope16-hand-ggml-imrope-plan-qwen3vl": [1, 4, 0] + PLAN_128 + VIEWS + [34, 1, 3]
        + QWEN_POSITIONS + [1],
        # mode 24 (VISION: n_dims 64, R 128) with sections {32, 32, 0, 0}
        "0-mrope-hand-ggml-vision-plan": [0, 4] + PLAN_128 + VIEWS + [32, 3, 7] + QWEN_POSITIONS
        + [0],
        # ggml sections {10, 10, 10, 10}: 64 pairs over 40 sectors, e row 0 (llama.cpp's text)
        "0-mrope-hand-ggml-sectors-wrap-e-row": [0, 4] + PLAN_128 + VIEWS + [32, 2, 10, 10, 10,
                                                                              10, 0]
        + QWEN_POSITIONS + [0],
        # the same interleaved (IMROPE's rule: t, h, w by c % 3 below 3 s, else e)
        "0-mrope-hand-ggml-imrope-sectors-e-row": [0, 4] + PLAN_128 + VIEWS + [34, 2, 10, 10, 10,
                                                                                10, 0]
        + QWEN_POSITIONS + [0],
        # a mode 8 plan used with MROPE_INTERLEAVED: must fail
        "0-mrope-hand-error-ggml-plan-interleaving": [0, 4] + PLAN_128 + VIEWS + [34, 1, 27]
        + QWEN_POSITIONS + [0],
        # ggml sections whose first three are 0: must fail
        "0-mrope-hand-error-ggml-sections-zero": [0, 4] + PLAN_128 + VIEWS + [32, 4, 5, 0]
        + QWEN_POSITIONS + [0],
    },
    "fuzz_rerotate": {
        # the same plan (to = from), positions 100-129 to 90-119: a context shift
        "0-rerotate-hand-context-shift": [0, 4] + PLAN_128 + [0] + [1, 30, 2, 1, 1, 0, 0, 0]
        + [0] + [1, 8, 100, 0] + [0] * 30 + [0, 4, 10] + [8, 0, 0],
        # to: the frequencies halved (linear scaling 2), att 2 (r = 2); GPTJ; packed rows, 3
        # heads at offset 1; the run 131077.. to itself
        "0-rerotate-hand-linear-scaling": [0, 4] + PLAN_128 + [2, 1, 4, 16]
        + [1, 12, 3, 0, 0, 2, 1] + [1] + [0, 6, 5] + [1],
        # F32_ANGLES, from: w = 1024 at 2^31 - 1; to: w' = 1 at 3 (a float32-recipe angle of
        # 2^41 rad, whose difference and reduction once lost up to 2^-13)
        "0-rerotate-hand-f32-angles-beyond-2p32": [0, 4] + [1, 3, 0, 34] + [2, 3, 0, 0]
        + [1, 1, 1, 0, 0, 0, 0, 0] + [8] + [1, 1, 0] + [2, 1, 8, 3, 0, 0] + [0, 0, 0, 0]
        + [0, 8, 0, 0],
        # to: rotary_dim 126: must fail
        "0-rerotate-hand-error-rotary-dim": [0, 4] + PLAN_128 + [7, 6] + VIEWS + [0]
        + [0, 8, 0, 0] + [1],
        # bf16, rotary_dim 80; to: the same frequencies in another plan, att 1e-30 (r = 1e-30);
        # positions -16..-1 to 2^31 - 16..: p' - p = 2^31, past int32
        "1-rerotate16-hand-bf16-delta-past-int32": [1, 4, 0] + [40, 4, 0, 1] + [5, 5]
        + [1, 16, 4, 2, 1, 0, 2, 1] + [0] + [1, 5, 16, 0] + [0] * 16 + [0, 1, 0] + [8, 0, 0],
        # bf16, rotary_dim 40; to: att FLT_MIN (r = FLT_MIN, the least accepted); run 0.. to 50..
        "1-rerotate16-hand-r-flt-min": [1, 4, 0] + [20, 4, 0, 1] + [7, 4]
        + [1, 8, 2, 0, 0, 0, 0, 0] + [0] + [0, 8, 0, 0] + [2, 1, 8, 50, 0],
    },
}
# fuzz_rope_views, in its decode order: family, misc, [factor families: compute flags, change
# to the factors and its argument, apply flags], plan, type pair, head_dim, n_batch, n_tokens,
# heads, dst's heads, src layout, placement, base offset, [dst layout], gap, then the op's
# flags and positions, or the factor rows (first_row, row_batch_stride, n_rows, positions,
# [sections], storage). Types: 0 f32, 1 bf16, 2 f16, 3 f32 -> bf16, 4 f32 -> f16. Layouts:
# 4 [B, L, H, D], 6 [B, H, L, D], 1 batch_stride 0, 2 padded, 7 one cache row per token.
# Placement: 0 in place, 2 dst inside src, 4 dst after src.
PLAN = [0] + PLAN_128  # a default plan (byte 0: the plan's kind), rotary_dim 128
D_R = [1]  # head_dim = R
AFTER = [4, 0]  # dst after src at offset 0 (then dst's layout)
# posenc_rope_plan_create_ggml: n_dims 128, base 500000, freq_scale 1/4, YaRN (ext_factor 1,
# beta_fast 32, beta_slow 1, n_ctx_orig 4096), attn_factor 1, no freq_factors
GGML_YARN = [2, 64, 4, 3, 3, 5, 1, 3, 3, 3, 0]
# the same without YaRN, with 64 freq_factors of 1.25 (Llama 3's rope_freqs)
GGML_FREQ_FACTORS = [2, 64, 4, 3, 1, 1, 1, 3, 3, 3, 3] + [0x14] * 64
# posenc_rope_plan_create_scaled: rotary_dim 128, LLAMA3, factor 8, original context 8192,
# low 1, high 4, base 500000 (Llama 3.1)
SCALED_LLAMA3 = [3, 64, 4, 5, 5, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
# M-RoPE positions: start 0; text 0-2, patches (temporal t, height t + a, width t + b), text
MROPE_POS = [2, 0] + [0, 0, 0] + [5, 1, 2, 5, 0, 3, 5, 2, 1, 5, 3, 4] + [0] * 6
HANDMADE["fuzz_rope_views"] = {
    # f32 [B, H, L, D] -> f16 [B, L, H, D]: 2 batches of 7 tokens, 3 heads, run from 100
    "0-rope_out-hand-f32-to-f16-bhld-to-blhd": [0, 4] + PLAN + [4] + D_R + [2, 7, 3, 1]
    + [6] + AFTER + [4] + [0] + [0] + [0, 8, 100, 0],
    # bf16 in place, padded [B, L, H, D], D = R + 2, GPTJ | INVERSE, positions 32767..
    "0-rope_out-hand-bf16-in-place-gptj-inverse": [0, 4] + PLAN + [1, 3] + [1, 20, 2, 1]
    + [2, 1, 2, 3] + [0, 1] + [0] + [3] + [1, 8, 0xFF, 0x7F] + [0] * 20,
    # src batch_stride 0 (one tensor for both batches) -> bf16, F32_ANGLES, a run ending at
    # INT32_MAX
    "0-rope_out-hand-src-batch-stride-0-run-to-int32-max": [0, 4] + PLAN + [3] + D_R
    + [2, 5, 1, 1] + [1] + AFTER + [4] + [0] + [8] + [0, 2, 4],
    # the same run one past INT32_MAX: must fail
    "0-rope_out-hand-error-run-past-int32-max": [0, 4] + PLAN + [3] + D_R + [2, 5, 1, 1]
    + [1] + AFTER + [4] + [0] + [8] + [0, 2, 3],
    # POSENC_ROPE_DETERMINISTIC | GPTJ, f32 -> bf16, [B, H, L, D] both, a ggml YaRN plan
    "0-rope_out-hand-deterministic-gptj-f32-to-bf16": [0, 4] + GGML_YARN + [3] + [3]
    + [2, 9, 2, 1] + [6] + AFTER + [6] + [0] + [33] + [1, 8, 0, 1] + [0] * 18,
    # dst starting inside src: must fail
    "0-rope_out-hand-error-partial-overlap": [0, 4] + PLAN + [0] + D_R + [1, 6, 2, 1] + [4]
    + [2, 0] + [4] + [0] + [77] + [0, 8, 0, 0],
    # a ggml YaRN plan, f32 -> f32 out of place
    "0-rope_out-hand-ggml-yarn": [0, 4] + GGML_YARN + [0] + D_R + [1, 16, 2, 1] + [4] + AFTER
    + [4] + [0] + [0] + [0, 8, 0, 0],
    # a ggml plan with freq_factors, f16 in place
    "0-rope_out-hand-ggml-freq-factors": [0, 4] + GGML_FREQ_FACTORS + [2] + D_R + [1, 9, 2, 1]
    + [4] + [0, 0] + [0] + [0] + [1, 8, 10, 0] + [0] * 9,
    # a Llama 3.1 scaled plan, f32 -> f32
    "0-rope_out-hand-scaled-llama3": [0, 4] + SCALED_LLAMA3 + [0] + D_R + [1, 8, 2, 1] + [4]
    + AFTER + [4] + [0] + [0] + [0, 8, 0, 1],
    # Qwen2-VL: contiguous sections [16, 24, 24], bf16 [B, L, H, D] -> [B, H, L, D]
    "1-mrope_out-hand-qwen2vl-blhd-to-bhld": [1, 4] + PLAN + [1] + D_R + [1, 12, 2, 1] + [4]
    + AFTER + [6] + [0] + [0] + [4] + MROPE_POS,
    # a decode step of 3 sequences: factors for 3 rows (positions 256, 131077, 131078), each
    # batch's token at its own row (row_batch_stride 1), f32 -> an f16 cache of rows
    "2-rope_factors-hand-decode-step-f16-cache": [2, 4] + [0, 0, 0, 0] + PLAN + [4] + D_R
    + [3, 1, 2, 1] + [4] + AFTER + [7, 1, 0, 0] + [0] + [0, 5, 0, 0] + [1, 8, 0, 1]
    + [0, 7, 6, 5, 0] + [0],
    # POSENC_ROPE_DETERMINISTIC factors (GPTJ) for 2 batches of 5 tokens, bf16 in place
    "2-rope_factors-hand-deterministic-gptj-bf16": [2, 4] + [33, 0, 0, 0] + PLAN + [1] + D_R
    + [2, 5, 2, 1] + [4] + [0, 0] + [0] + [0, 0, 0] + [1, 8, 0, 2] + [0] * 10 + [0],
    # GPTJ factors applied with INVERSE, every batch at the same rows (row_batch_stride 0)
    "2-rope_factors-hand-gptj-inverse-rbs0": [2, 4] + [1, 0, 0, 2] + PLAN + [0] + D_R
    + [2, 6, 2, 1] + [4] + AFTER + [4] + [0] + [0, 4, 0] + [1, 8, 40, 0] + [0] * 6 + [0],
    # a sub-range: the factors' data moved on by 2 rows, first_row 3 - 2
    "2-rope_factors-hand-sub-range": [2, 4] + [0, 15, 2, 0] + PLAN + [0] + D_R
    + [1, 4, 2, 1] + [4] + AFTER + [4] + [0] + [6, 3, 0, 0] + [1, 8, 7, 0] + [0] * 7 + [0],
    # applied with the other layout: must fail
    "2-rope_factors-hand-error-layout-mismatch": [2, 4] + [0, 0, 0, 15] + PLAN + [0] + D_R
    + [1, 4, 2, 1] + [4] + AFTER + [4] + [0] + [0, 0, 0] + [0, 8, 7, 0] + [0],
    # storage one row short: the compute must fail
    "2-rope_factors-hand-error-storage-short": [2, 4] + [0, 0, 0, 0] + PLAN + [0] + D_R
    + [1, 4, 2, 1] + [4] + AFTER + [4] + [0] + [0, 0, 0] + [0, 8, 7, 0] + [15],
    # Qwen3-VL: interleaved sections [22, 21, 21] of 64 pairs, bf16 in place
    "3-mrope_factors-hand-qwen3vl-interleaved": [3, 4] + [2, 0, 0, 0] + PLAN + [1] + D_R
    + [1, 12, 2, 1] + [4] + [0, 0] + [0] + [0, 0, 0] + MROPE_POS + [4] + [0],
}
# fuzz_rope_kv, in its decode order (rope_kv_decode.c): family, misc, plan (as fuzz_rope_views),
# type pair (Q8 / FP8: then a byte, src f32 unless 15 mod 16), head_dim, [QKNORM: n_batch],
# n_tokens, heads, dst's heads, src layout, base offset; then QKNORM: k (kb: 0 none, 7
# packed; pb: 0 q and k in place, 1 q's dst after), k's heads, [q's dst layout], [k's src
# layout], [k's dst layout], the q and k norms (b: 0 none, 1 NULL weight, 3 weight, 7 Gemma;
# eps: 0 1e-6, 1 1e-5, 12 -1e-6; weight pattern: 0 ones, 1 zeros, 2 varied); SLOTS: the
# slots (cb: cells n_tokens + cb % 5, int64 if bit 4; mb: 1 every third token -1; eb: 5 a
# duplicate, 6 a cell >= n_cells; u32 seed; tokens a, b) and the cache layout (0 vLLM, 2
# llama.cpp); Q8 / FP8: slots (0 none, 1 as SLOTS), dst heads, dst layout (0 dense, 5
# [H, rows, vector], 6 odd), [FP8: scale, 4 = 1/448]; then flags and positions.
KV_PLAN = [0] + PLAN_128
KV_RUN_0 = [0, 8, 0, 0]  # positions NULL, start_pos 0
HANDMADE["fuzz_rope_kv"] = {
    # Qwen3: bf16 q and k in place, RMSNorm weights varied, eps 1e-6, a run from 0
    "0-qknorm-hand-qwen3-bf16-in-place": [0, 4] + KV_PLAN + [1, 1] + [1, 6, 4, 1] + [4, 0]
    + [1, 0, 2] + [4] + [3, 0, 2] + [3, 0, 2] + [0] + KV_RUN_0,
    # Gemma 3: (1 + w) with eps 1e-5, f32 [B, H, L, D] q out of place, 2 batches, GPTJ
    "0-qknorm-hand-gemma-f32-out-of-place": [0, 4] + KV_PLAN + [0, 1] + [2, 5, 2, 1] + [6, 0]
    + [1, 1, 1] + [4] + [6] + [7, 1, 2] + [7, 1, 1] + [1] + [1, 8, 10, 0] + [0] * 10,
    # packed QKV rows, q and k in place, f16, k without a norm
    "0-qknorm-hand-packed-qkv-f16": [0, 4] + KV_PLAN + [2, 1] + [1, 7, 4, 1] + [4, 0]
    + [7, 0, 2] + [3, 0, 2] + [0] + [0] + KV_RUN_0,
    # f32 -> bf16, R 600 with a norm: must fail (rotary_dim above 512)
    "0-qknorm-hand-error-rotary-600": [0, 4] + [0, 0, 2, 44, 0, 1] + [3, 1] + [1, 2, 1, 1]
    + [4, 0] + [0, 0, 0] + [4] + [3, 0, 0] + [0] + [0] + KV_RUN_0,
    # a NULL q weight: must fail
    "0-qknorm-hand-error-null-weight": [0, 4] + KV_PLAN + [0, 1] + [1, 3, 2, 1] + [4, 0]
    + [1, 0, 1] + [4] + [1, 0] + [3, 0, 0] + [0] + KV_RUN_0,
    # eps -1e-6 on k: must fail
    "0-qknorm-hand-error-eps-negative": [0, 4] + KV_PLAN + [0, 1] + [1, 3, 2, 1] + [4, 0]
    + [1, 0, 1] + [4] + [0] + [3, 12, 0] + [0] + KV_RUN_0,
    # vLLM: int64 slot_mapping into [cells, H, D], 12 cells for 8 tokens, every third padding
    "1-slots-hand-vllm-int64": [1, 4] + KV_PLAN + [0, 1] + [8, 2, 1] + [4, 0]
    + [0x13, 1, 0, 1, 2, 3, 4, 0, 0] + [0] + [0] + [1, 8, 0, 1] + [0] * 8,
    # llama.cpp: int32 cells of an f16 [H, cells, D] K cache
    "1-slots-hand-llama-cpp-f16": [1, 4] + KV_PLAN + [2, 1] + [6, 2, 1] + [4, 0]
    + [0x02, 0, 0, 9, 9, 9, 9, 0, 0] + [2] + [0] + [0, 8, 50, 0],
    # two tokens for one cell: must fail
    "1-slots-hand-error-duplicate": [1, 4] + KV_PLAN + [0, 1] + [6, 2, 1] + [4, 0]
    + [0x02, 0, 5, 9, 9, 9, 9, 1, 2] + [0] + [0] + KV_RUN_0,
    # a cell = n_cells: must fail
    "1-slots-hand-error-cell-past-end": [1, 4] + KV_PLAN + [0, 1] + [6, 2, 1] + [4, 0]
    + [0x02, 0, 6, 9, 9, 9, 9, 3, 0, 0] + [0] + [0] + KV_RUN_0,
    # ggml q8_0 K cache rows, 8 tokens, 2 heads of 128
    "2-q8_0-hand-rows": [2, 4] + KV_PLAN + [0, 0, 1] + [8, 2, 1] + [4, 0] + [0, 1, 0] + [0]
    + [1, 8, 0, 0] + [0] * 8,
    # q8_0 through int32 slots, [H, rows, vector] cache
    "2-q8_0-hand-slots": [2, 4] + KV_PLAN + [0, 0, 1] + [5, 2, 1] + [4, 0]
    + [1, 0x03, 0, 0, 5, 6, 7, 8, 0, 0] + [1, 5] + [0] + KV_RUN_0,
    # odd q8_0 strides: must fail
    "2-q8_0-hand-error-odd-strides": [2, 4] + KV_PLAN + [0, 0, 1] + [3, 2, 1] + [4, 0]
    + [0, 1, 6] + [0] + KV_RUN_0,
    # fp8 E4M3 with scale 1/448, GPTJ | DETERMINISTIC
    "3-fp8-hand-scale-deterministic": [3, 4] + KV_PLAN + [0, 0, 1] + [8, 2, 1] + [4, 0]
    + [0, 1, 0, 4] + [33] + KV_RUN_0,
    # fp8 through int64 slots, scale 1e-30 (every value saturates)
    "3-fp8-hand-slots-saturating": [3, 4] + KV_PLAN + [0, 0, 1] + [6, 1, 1] + [4, 0]
    + [1, 0x11, 3, 0, 1, 1, 1, 1, 0, 0] + [1, 0, 6] + [0] + KV_RUN_0,
    # scale 0: must fail
    "3-fp8-hand-error-scale-zero": [3, 4] + KV_PLAN + [0, 0, 1] + [4, 2, 1] + [4, 0]
    + [0, 1, 0, 8] + [0] + KV_RUN_0,
}
# fuzz_softmax, in its decode order: misc, which (NULL / misaligned pointer), n_heads, n_q,
# n_k (< 0xC0: n_k % 70; else 70 + u16 % 231), types (x = t % 3, y = t / 3 % 3, in place if
# t / 9 % 3 == 0; 0 f32, 1 bf16, 2 f16), x's layout (0 [H, n_q, n_k], 3 [n_q, H, n_k]), y's
# (in place: a byte, 0 mod 16 to decode one), placement and start, q_offset (0: 0, 1:
# n_k - n_q), flags, window (0: 1 + u16), soft-cap (0: 30, 1: 50), scale (0: 1, 1: 0.125),
# slopes (0 none, 1 posenc_alibi_slopes: odd byte max_bias 8; 2 per-head bytes), sinks (0
# none, 2 per-head bytes (b - 136) / 16), kpos and qpos (0 none, 4 run from a byte, 5 gaps;
# then a u32 seed), the mask (b % 8 >= 3, bit 3 f16; row stride 1 = n_k, head stride 0
# shared / 1 per head, pattern (1 causal, 3 ggml's -|qpos - kpos|), window, u32 seed), an
# array in the arena (7: which, where), the row-split check (0: on) and NaN poisoning (1).
SEED = [0x5E, 0xED, 0x0F, 0x12]
HANDMADE["fuzz_softmax"] = {
    # llama.cpp-style prefill tail: bf16 scores into f32 probabilities, 2 heads x 4 rows x 40
    # keys, q_offset 36, CAUSAL, a shared f32 causal mask
    "softmax-hand-bf16-to-f32-causal-mask": [4, 0, 2, 4, 40, 10, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0,
                                             0, 0, 0, 0, 0, 3, 1, 0, 1, 0] + SEED + [0, 0, 1],
    # gpt-oss: f32 in place, 4 heads x 8 rows x 200 keys, q_offset 192, a sliding window of 128
    # keys, per-head sinks (1, -1, 2, 0), scale 0.125
    "softmax-hand-sinks-sliding-window-in-place": [4, 0, 4, 8, 0xC0, 130, 0, 0, 0, 1, 0, 0, 1,
                                                   2, 0, 127, 0, 0, 1, 0, 2, 152, 120, 168, 136,
                                                   0, 0, 0, 0, 0, 1],
    # Gemma 2: soft-cap 50, CAUSAL, f16 scores [n_q, H, n_k] into bf16 probabilities, y after x,
    # 3 heads x 5 rows x 64 keys, signed ALiBi with posenc_alibi_slopes(3, 8)
    "softmax-hand-softcap-f16-to-bf16": [4, 0, 3, 5, 64, 14, 3, 0, 4, 0, 0, 5, 0, 0, 0, 1, 0,
                                         1, 1, 0, 0, 0, 0, 0, 0, 1],
    # ggml's ALiBi: MASK_SLOPE | CAUSAL, an f16 mask of -|qpos - kpos|, 4 heads x 3 rows x 33
    # keys, q_offset 30
    "softmax-hand-ggml-alibi-mask-slope-f16": [4, 0, 4, 3, 33, 9, 0, 0, 0, 0, 1, 17, 0, 0, 0,
                                               0, 0, 1, 1, 0, 0, 0, 11, 1, 0, 3, 0] + SEED
    + [0, 0, 0],
    # a KV cache with gaps: kpos increasing with gaps and repeats, qpos a run from 40, CAUSAL |
    # WINDOW 21, signed ALiBi, f32 out of place
    "softmax-hand-kpos-qpos-causal-window": [4, 0, 2, 4, 50, 9, 0, 0, 0, 0, 0, 3, 0, 20, 0, 0,
                                             0, 1, 1, 0, 5, 0] + SEED + [4, 40] + SEED
    + [0, 0, 1],
    # the mask inside y: must fail
    "softmax-hand-error-mask-in-y": [4, 0, 2, 4, 40, 10, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0,
                                     0, 0, 3, 1, 0, 1, 0] + SEED + [7, 0, 0, 10, 0, 0, 1],
    # MASK_SLOPE without slopes: must fail
    "softmax-hand-error-mask-slope-no-slopes": [4, 0, 4, 3, 33, 9, 0, 0, 0, 0, 1, 17, 0, 0, 0,
                                                0, 0, 0, 0, 0, 0, 11, 1, 0, 3, 0] + SEED
    + [0, 0, 0],
}
# posenc_softmax_batched (misc % 32 in 10..12): after n_k, n_batch (0-3), the batch strides
# (x: 0 dense, 1 padded, 2 zero; y: the same times 4, 3 one element short: overlapping),
# mask_n_heads (0, 1, 2 n_heads, 3 2 or 3), mask_n_batch (0, 1, 2 n_batch, 3 two; bit 7
# the masks 3 elements apart), int64 positions (bit 0 kpos, 1 qpos, 2 both forms: an
# error, 3 a value outside int32)
def batched_mask(bat, pattern=1):
    return [10, 0, 2, 4, 40] + bat + [9, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1,
                                      0, pattern, 0] + SEED + [0, 0, 1]
def batched_positions(bat):
    return [10, 0, 2, 4, 50] + bat + [9, 0, 0, 0, 0, 0, 3, 0, 20, 0, 0, 0, 1, 1, 0, 5, 0] \
        + SEED + [4, 40] + SEED + [0, 0, 1]
HANDMADE["fuzz_softmax"].update({
    # 2 batches, ggml's broadcast: one mask head (mask_n_heads 1), a mask per batch (random
    # -inf)
    "softmax-hand-batched-ggml-mask-broadcast": batched_mask([2, 0, 1, 2, 0], 2),
    # 3 batches reading one x (batch_stride 0), y padded, a mask per head and batch
    "softmax-hand-batched-x-repeated-mask-per-batch": batched_mask([3, 6, 2, 0x82, 0]),
    # kpos64 and qpos64 (vLLM's int64 positions)
    "softmax-hand-batched-int64-positions": batched_positions([2, 0, 0, 0, 3]),
    # a kpos64 value past INT32_MAX: must fail
    "softmax-hand-batched-error-int64-past-int32": batched_positions([2, 0, 0, 0, 9]),
    # 3 batches, mask_n_batch 2: must fail
    "softmax-hand-batched-error-mask-batches-do-not-divide": batched_mask([3, 0, 0, 3, 0]),
    # y batch_stride 0 with 2 batches: must fail
    "softmax-hand-batched-error-y-batch-stride-0": batched_mask([2, 8, 0, 0, 0]),
})
# Hand-written seeds of the draws added later, in the formats above:
#  - fuzz_rope: the flags byte's bit 6 is POSENC_ROPE_POSITIONS_INT64 (with a positions
#    array, a byte after the positions: 3 mod 4 puts a value outside int32 at index b >> 2 & 7);
#  - fuzz_rope_views: the op flags' bit 2 is POSENC_ROPE_MROPE_GGML (M-RoPE: ggml's four
#    sections by rope_common.c's decode_ggml_sections, 0 Qwen2-VL's, 1 Qwen3-VL's, and a 4th
#    position row whose byte follows the positions), bit 6 POSENC_ROPE_POSITIONS_INT64 (then a
#    byte as fuzz_rope's); the compute flags' bit 7 GGML, bit 6 INT64;
#  - fuzz_rope_kv: SLOTS' cb bit 5 is the factor form (posenc_rope_apply_slots): after the
#    positions ab (ab % 4 == 0 drops INVERSE from the compute; ab >> 2 & 15: 9 GPTJ flipped,
#    10 DETERMINISTIC flipped, 11-13 no-op bits, 14 NULL factors) and fb (fb >> 3 % 4
#    first_row with a positions array, fb % 8 == 7 a row short);
#  - fuzz_softmax: the mask head byte's bits 2-4 pick mask_n_heads for posenc_softmax (4: 1,
#    5: n_heads, 6: 2, 7: 3), bits 5-7 mask_n_batch (5: 1, 6: 2, an error).
ROPE_INT64 = [4, 64, 4, 1, 1, 1, 10, 2, 1, 1, 0, 0, 0, 64, 1, 8, 0, 1] + [0] * 10
HANDMADE["fuzz_rope"] = {
    "0-rope-hand-int64-positions": [0] + ROPE_INT64 + [0],
    "1-rope_bf16-hand-int64-positions": [1] + ROPE_INT64 + [0],
    "0-rope-hand-error-int64-below-int32": [0] + ROPE_INT64 + [3],
    "2-rope_f16-hand-error-int64-past-int32": [2] + ROPE_INT64 + [0x27],
}
HANDMADE["fuzz_rope_views"].update({
    # ggml's Qwen2-VL M-RoPE {16, 24, 24, 0}, e row 0, bf16 [B, L, H, D] -> [B, H, L, D]
    "1-mrope_out-hand-ggml-qwen2vl": [1, 4] + PLAN + [1] + D_R + [1, 12, 2, 1] + [4] + AFTER
    + [6] + [0] + [4] + [0] + MROPE_POS,
    # ggml's IMROPE (Qwen3-VL {24, 20, 20, 0}) with int64 positions, f32 -> f16
    "1-mrope_out-hand-ggml-imrope-int64": [1, 4] + PLAN + [4] + D_R + [1, 12, 2, 1] + [4]
    + AFTER + [4] + [0] + [84] + [1] + MROPE_POS + [0],
    # int64 positions, f32 [B, H, L, D] -> f16 [B, L, H, D], 2 batches of 7
    "0-rope_out-hand-int64-positions": [0, 4] + PLAN + [4] + D_R + [2, 7, 3, 1] + [6] + AFTER
    + [4] + [0] + [64] + [1, 8, 100, 0] + [0] * 14 + [0],
    # an int64 position below INT32_MIN: must fail
    "0-rope_out-hand-error-int64-outside-int32": [0, 4] + PLAN + [4] + D_R + [2, 7, 3, 1] + [6]
    + AFTER + [4] + [0] + [64] + [1, 8, 100, 0] + [0] * 14 + [3],
    # ggml IMROPE factors (Qwen3-VL's sections) from int64 rows, bf16 in place
    "3-mrope_factors-hand-ggml-imrope-int64": [3, 4] + [2 | 64 | 128, 0, 0, 0] + PLAN + [1]
    + D_R + [1, 12, 2, 1] + [4] + [0, 0] + [0] + [0, 0, 0] + MROPE_POS + [1] + [0] + [0],
    # int64 rows, one past INT32_MAX: the compute must fail
    "2-rope_factors-hand-error-int64-rows": [2, 4] + [64, 0, 0, 0] + PLAN + [0] + D_R
    + [1, 4, 2, 1] + [4] + AFTER + [4] + [0] + [0, 0, 0] + [1, 8, 7, 0] + [0] * 4 + [0x23]
    + [0],
})
HANDMADE["fuzz_rope_kv"].update({
    # posenc_rope_apply_slots: vLLM int64 slot_mapping, first_row 1
    "1-slots-hand-apply-vllm-int64": [1, 4] + KV_PLAN + [0, 1] + [8, 2, 1] + [4, 0]
    + [0x33, 1, 0, 1, 2, 3, 4, 0, 0] + [0] + [0] + [1, 8, 0, 1] + [0] * 8 + [0, 8],
    # posenc_rope_apply_slots into llama.cpp's f16 [H, cells, D], GPTJ, a run from 50
    "1-slots-hand-apply-llama-cpp-f16-gptj": [1, 4] + KV_PLAN + [2, 1] + [6, 2, 1] + [4, 0]
    + [0x22, 0, 0, 9, 9, 9, 9, 0, 0] + [2] + [1] + [0, 8, 50, 0] + [1, 0],
    # applied with GPTJ flipped: must fail
    "1-slots-hand-apply-error-layout-mismatch": [1, 4] + KV_PLAN + [0, 1] + [6, 2, 1] + [4, 0]
    + [0x22, 0, 0, 9, 9, 9, 9, 0, 0] + [0] + [0] + KV_RUN_0 + [36, 0],
    # a factor row short: must fail
    "1-slots-hand-apply-error-row-short": [1, 4] + KV_PLAN + [0, 1] + [6, 2, 1] + [4, 0]
    + [0x22, 0, 0, 9, 9, 9, 9, 0, 0] + [0] + [0] + KV_RUN_0 + [1, 7],
    # two tokens for one cell: must fail, nothing written
    "1-slots-hand-apply-error-duplicate": [1, 4] + KV_PLAN + [0, 1] + [6, 2, 1] + [4, 0]
    + [0x22, 0, 5, 9, 9, 9, 9, 1, 2] + [0] + [0] + KV_RUN_0 + [1, 0],
})
def broadcast_mask(heads, hb, mb=3):
    return [4, 0, heads, 4, 40, 10, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, mb, 1, hb, 2,
            0] + SEED + [0, 0, 1]
HANDMADE["fuzz_softmax"].update({
    # posenc_softmax, 4 heads reading 2 mask heads (mask_n_heads 2), random -inf
    "softmax-hand-mask-n-heads-2": broadcast_mask(4, 1 | 6 << 2),
    # 4 heads reading one f16 mask head (mask_n_heads 1), split check on
    "softmax-hand-mask-n-heads-1-f16": broadcast_mask(4, 1 | 4 << 2, 11),
    # mask_n_heads 3 for 4 heads: must fail
    "softmax-hand-error-mask-n-heads-3-of-4": broadcast_mask(4, 1 | 7 << 2),
    # mask_n_batch 2 in the unbatched call: must fail
    "softmax-hand-error-mask-n-batch-2-unbatched": broadcast_mask(2, 1 | 6 << 5),
})
for target, seeds in HANDMADE.items():
    if only and target not in only:
        continue
    for name, blob in seeds.items():
        write(target, name, bytes(blob))
        written += 1
print(f"make_corpus: wrote {written} files to {out}")
