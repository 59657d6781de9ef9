"""HF's RoPE against posenc.hf's, as a Llama attention layer calls them: the rotary module's
forward (once per model forward) and apply_rotary_pos_emb (once per layer), for a decode step
(one token at position 4095) and a 512-token prefill, Llama-3-8B shapes (32 query heads,
8 key/value heads, head_dim 128, theta 500000), torch on one thread. Medians of 9
repetitions (--repeat), the four rows of a case interleaved in each repetition, so that a
busy machine slows both sides alike; the ratio is HF's time over posenc's.

Targets (issue 26): the rotary forward at decode >= 1.0x HF's, apply >= 1.2x at decode and
>= 10x at 512 tokens; each row says whether it meets its target ("-": none).

Usage: python python/benchmarks/hf_rope.py [--repeat N] [--check]   (needs torch and
       transformers; --check: exit status 1 when a row misses its target)
"""

import argparse
import statistics
import sys
import timeit

import torch
from transformers import LlamaConfig
from transformers.models.llama import modeling_llama as llama

import posenc.hf as phf

# (case, row) -> the least HF/posenc ratio asked for
TARGETS = {("decode", "rotary forward"): 1.0, ("decode", "apply (q and k)"): 1.2,
           ("prefill", "apply (q and k)"): 10.0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9, help="repetitions (default 9)")
    parser.add_argument("--check", action="store_true",
                        help="exit status 1 when a row misses its target")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = LlamaConfig(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                         rope_theta=500000.0, max_position_embeddings=8192)
    hf_rotary = llama.LlamaRotaryEmbedding(config)
    posenc_rotary = phf.RotaryEmbedding(config, "accurate")
    print(f"{'case':<8} {'row':<18} {'HF us':>10} {'posenc us':>10} {'HF/posenc':>10} "
          f"{'target':>7} {'met':>4}")
    missed = []
    for name, n_tokens, start, number in (("decode", 1, 4095, 300), ("prefill", 512, 0, 10)):
        x = torch.randn(1, n_tokens, 4096)
        q = torch.randn(1, n_tokens, 32, 128).transpose(1, 2)  # as the attention passes them
        k = torch.randn(1, n_tokens, 8, 128).transpose(1, 2)
        pos = torch.arange(start, start + n_tokens)[None]
        hf_tables, posenc_tables = hf_rotary(x, pos), posenc_rotary(x, pos)
        rows = {
            ("rotary forward", "HF"): lambda: hf_rotary(x, pos),
            ("rotary forward", "posenc"): lambda: posenc_rotary(x, pos),
            ("apply (q and k)", "HF"): lambda: llama.apply_rotary_pos_emb(q, k, *hf_tables),
            ("apply (q and k)", "posenc"): lambda: phf.apply_rotary_pos_emb(q, k,
                                                                            *posenc_tables),
        }
        times = {key: [] for key in rows}
        for _ in range(args.repeat):
            for key, fn in rows.items():
                times[key].append(timeit.timeit(fn, number=number) / number * 1e6)
        for row in ("rotary forward", "apply (q and k)"):
            hf, ours = (statistics.median(times[(row, who)]) for who in ("HF", "posenc"))
            ratio = hf / ours
            target = TARGETS.get((name, row))
            if target is None:
                wanted, met = "-", "-"
            else:
                wanted, met = f">={target:g}x", "yes" if ratio >= target else "NO"
                if ratio < target:
                    missed.append(f"{name} {row}: {ratio:.2f}x < {target:g}x")
            print(f"{name:<8} {row:<18} {hf:10.1f} {ours:10.1f} {ratio:9.2f}x {wanted:>7} "
                  f"{met:>4}")
    print("targets: all met" if not missed else "targets missed: " + "; ".join(missed))
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
