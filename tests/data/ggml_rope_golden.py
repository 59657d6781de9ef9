#!/usr/bin/env python3
"""Golden RoPE frequencies of ggml's rope (ggml_rope_ext), for tests/rope_ggml_test.cc.

A transcription of ggml's CPU rope, written from ggml's own source (ggml-org/ggml,
src/ggml-cpu/ops.cpp: ggml_compute_forward_rope_flt, ggml_rope_cache_init, rope_yarn,
rope_yarn_ramp; src/ggml.c: ggml_rope_yarn_corr_dim(s)) and evaluated in float64 instead
of ggml's float32, independently of posenc's C code. Per pair i (ggml's i0 = 2i) and
position p, ggml computes

    theta_scale  = freq_base ** (-2 / n_dims)
    theta_extrap = p * theta_scale**i / freq_factors[i]        (1 without freq_factors)
    theta_interp = freq_scale * theta_extrap
    theta        = theta_interp                                 if ext_factor == 0, else
    theta        = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix,
                   ramp_mix = ramp(i) * ext_factor,
                   ramp(i)  = 1 - min(1, max(0, (i - lo) / max(0.001, hi - lo)))
    lo, hi       = max(0, floor(corr(beta_fast))), min(n_dims - 1, ceil(corr(beta_slow)))
    corr(b)      = n_dims * log(n_ctx_orig / (b * 2 * pi)) / (2 * log(freq_base))
    cos, sin     = cos(theta) * mscale, sin(theta) * mscale,
                   mscale = attn_factor * (1 + 0.1 * log(1 / freq_scale)) if ext_factor != 0
                            else attn_factor

theta is linear in p, so the rotation is a plan of R/2 frequencies (theta at p = 1) and an
attention factor (mscale). ggml forms theta_scale**i as a running float32 product
(theta *= theta_scale); here it is the real number freq_base**(-2i/n_dims), evaluated to 40
digits with `decimal` and rounded once to float64. Everything after it is float64 in ggml's
order of operations.

The Llama-3 freq_factors are those llama.cpp's convert_hf_to_gguf.py writes as the
rope_freqs tensor (its llama3 branch, here in float64, then rounded to float32 as GGUF stores
them); the file holds them as float32 values, and the test passes those floats.

Pure Python (no NumPy: CI machines need not have it). Run by hand when a case changes:

    python3 tests/data/ggml_rope_golden.py          # -o to write elsewhere

File format (one record per line, whitespace-separated; floats as Python float.hex, as in
hf_rope_golden.txt):
    posenc-ggml-rope-golden 1
    source <what the formula was transcribed from>
    case <name>                      starts a case; `end` closes it
    layout neox|gptj                 ggml's GGML_ROPE_TYPE_NEOX / its normal mode
    head_dim <D>                     for the rotation check (elements [R, D) untouched)
    n_dims <R> / n_ctx_orig <n>
    freq_base / freq_scale / ext_factor / attn_factor / beta_fast / beta_slow <hex>
                                     ggml_rope_ext's arguments as passed
    freq_factors <n> <hex>...        only when the case has them (float32 values)
    attention_factor <hex>           mscale: what cos and sin are multiplied by
    freqs <n> <hex>...               theta at position 1, pair by pair
"""

import argparse
import decimal
import math
import struct
from pathlib import Path

SOURCE = "ggml-org/ggml d99724f2b141fed9e1a9f402213506c081433465 src/ggml-cpu/ops.cpp src/ggml.c"


def f32(x):
    """x rounded to float32 (as GGUF stores rope_freqs)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def theta_scale_pow(freq_base, i, n_dims):
    """theta_scale**i = freq_base**(-2i/n_dims): 40 digits, rounded once to float64."""
    with decimal.localcontext() as ctx:
        ctx.prec = 40
        base = decimal.Decimal(freq_base)
        exponent = decimal.Decimal(-2 * i) / decimal.Decimal(n_dims)
        return float((exponent * base.ln()).exp())


def corr_dim(n_dims, n_ctx_orig, n_rot, base):
    """ggml_rope_yarn_corr_dim."""
    return n_dims * math.log(n_ctx_orig / (n_rot * 2 * math.pi)) / (2 * math.log(base))


def corr_dims(n_dims, n_ctx_orig, freq_base, beta_fast, beta_slow):
    """ggml_rope_yarn_corr_dims: the ramp's ends, rounded outward and clamped."""
    start = math.floor(corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base))
    end = math.ceil(corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base))
    return max(0.0, float(start)), min(float(n_dims - 1), float(end))


def yarn_ramp(low, high, i0):
    """rope_yarn_ramp: i0 is the element index, i0 // 2 the pair."""
    y = (i0 // 2 - low) / max(0.001, high - low)
    return 1 - min(1.0, max(0.0, y))


def ggml_rope(c):
    """(frequencies at p = 1, mscale) of ggml's rope for case c."""
    n_dims, freq_scale, ext_factor = c["n_dims"], c["freq_scale"], c["ext_factor"]
    dims = corr_dims(n_dims, c["n_ctx_orig"], c["freq_base"], c["beta_fast"], c["beta_slow"]) \
        if ext_factor != 0 else None
    factors = c.get("freq_factors")
    mscale = c["attn_factor"]
    freqs = []
    for i0 in range(0, n_dims, 2):  # ggml_rope_cache_init, then rope_yarn
        ff = factors[i0 // 2] if factors else 1.0
        theta_extrap = theta_scale_pow(c["freq_base"], i0 // 2, n_dims) / ff
        theta_interp = freq_scale * theta_extrap
        theta = theta_interp
        if ext_factor != 0:
            ramp_mix = yarn_ramp(dims[0], dims[1], i0) * ext_factor
            theta = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix
        freqs.append(theta)
    if ext_factor != 0:
        mscale *= 1 + 0.1 * math.log(1 / freq_scale)
    return freqs, mscale


def llama3_rope_freqs(n_dims, freq_base, factor, low_freq_factor, high_freq_factor,
                      old_context_len):
    """convert_hf_to_gguf.py's llama3 rope_freqs: one divisor per pair, float32."""
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    out = []
    for i in range(n_dims // 2):
        freq = 1.0 / freq_base ** (2 * i / n_dims)
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            rf = 1.0
        elif wavelen > low_freq_wavelen:
            rf = factor
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / \
                (high_freq_factor - low_freq_factor)
            rf = 1 / ((1 - smooth) / factor + smooth)
        out.append(f32(rf))
    return out


def case(name, layout, head_dim, n_dims, freq_base, freq_scale=1.0, ext_factor=0.0,
         attn_factor=1.0, beta_fast=32.0, beta_slow=1.0, n_ctx_orig=0, freq_factors=None):
    return dict(name=name, layout=layout, head_dim=head_dim, n_dims=n_dims,
                freq_base=float(freq_base), freq_scale=float(freq_scale),
                ext_factor=float(ext_factor), attn_factor=float(attn_factor),
                beta_fast=float(beta_fast), beta_slow=float(beta_slow), n_ctx_orig=n_ctx_orig,
                freq_factors=freq_factors)


def cases():
    # A fixed, varied set of divisors in [1, 4] (exact float32 values) for YaRN + rope_freqs.
    mixed_factors = [f32(1 + 3 * ((7 * i) % 32) / 31) for i in range(32)]
    deepseek_scale = 1 / 40  # rope.scaling.factor 40
    return [
        # Llama 2: base 10000, R 128, ggml's normal mode (llama.cpp permutes Q/K at convert).
        case("llama2-7b", "gptj", 128, 128, 10000),
        # Llama 3.1: base 500000 and the rope_freqs divisors of factor 8, low 1, high 4, 8192.
        case("llama3.1-8b-rope-freqs", "gptj", 128, 128, 500000,
             freq_factors=llama3_rope_freqs(128, 500000.0, 8.0, 1.0, 4.0, 8192)),
        # YaRN, Qwen2 / DeepSeek-like: factor 4 over 4096 positions, llama.cpp's betas.
        case("yarn-factor4", "neox", 128, 128, 10000, freq_scale=0.25, ext_factor=1,
             n_ctx_orig=4096),
        # DeepSeek-V2-Lite-like: factor 40; llama.cpp's deepseek2 passes attn_factor
        # 1 / (1 + 0.1 ln(1 / freq_scale)), cancelling ggml's YaRN magnitude correction.
        case("yarn-deepseek-v2-like", "gptj", 64, 64, 10000, freq_scale=deepseek_scale,
             ext_factor=1, attn_factor=1 / (1 + 0.1 * math.log(1 / deepseek_scale)),
             n_ctx_orig=4096),
        # YaRN with a partial extrapolation mix, attn_factor != 1, R not a power of two.
        case("yarn-ext-half-attn", "neox", 96, 96, 1e6, freq_scale=0.125, ext_factor=0.5,
             attn_factor=1.25, n_ctx_orig=32768),
        # Qwen2-like plain rope: R 64, base 1e6.
        case("qwen2-r64-base1e6", "neox", 64, 64, 1e6),
        # GPT-J style: R 64 of head_dim 256, linear scaling (freq_scale 0.5, no YaRN).
        case("gptj-r64-linear", "gptj", 256, 64, 10000, freq_scale=0.5),
        # YaRN with beta_fast < beta_slow: hi < lo, ggml's max(0.001, hi - lo) makes a step.
        case("yarn-betas-swapped", "neox", 128, 128, 10000, freq_scale=0.25, ext_factor=1,
             beta_fast=1, beta_slow=32, n_ctx_orig=4096),
        # YaRN over a short original context: corr(beta_fast) < 0, lo clamped to 0.
        case("yarn-lo-clamped", "neox", 128, 128, 10000, freq_scale=0.25, ext_factor=1,
             n_ctx_orig=64),
        # YaRN whose corr(beta_slow) passes n_dims - 1: hi clamped to 63.
        case("yarn-hi-clamped", "neox", 64, 64, 10, freq_scale=0.25, ext_factor=1,
             n_ctx_orig=1024),
        # YaRN with freq_factors too (both apply: theta_extrap is theta / ff).
        case("yarn-with-freq-factors", "neox", 64, 64, 10000, freq_scale=0.25, ext_factor=1,
             n_ctx_orig=4096, freq_factors=mixed_factors),
        # freq_scale > 1 with YaRN: ggml's mscale 1 + 0.1 ln(0.5) < 1, not clamped.
        case("yarn-freq-scale-2", "neox", 128, 128, 10000, freq_scale=2, ext_factor=1,
             n_ctx_orig=4096),
    ]


def write(path):
    lines = ["posenc-ggml-rope-golden 1", "source " + SOURCE]
    for c in cases():
        freqs, mscale = ggml_rope(c)
        lines += [f"case {c['name']}", f"layout {c['layout']}", f"head_dim {c['head_dim']}",
                  f"n_dims {c['n_dims']}", f"n_ctx_orig {c['n_ctx_orig']}"]
        for key in ("freq_base", "freq_scale", "ext_factor", "attn_factor", "beta_fast",
                    "beta_slow"):
            lines.append(f"{key} {c[key].hex()}")
        if c["freq_factors"]:
            ff = c["freq_factors"]
            lines.append(f"freq_factors {len(ff)} " + " ".join(x.hex() for x in ff))
        lines.append(f"attention_factor {mscale.hex()}")
        lines.append(f"freqs {len(freqs)} " + " ".join(x.hex() for x in freqs))
        lines.append("end")
    Path(path).write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=Path(__file__).with_name("ggml_rope_golden.txt"))
    write(parser.parse_args().output)


if __name__ == "__main__":
    main()
