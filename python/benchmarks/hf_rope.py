"""HF's RoPE against posenc.hf's, as a Llama attention layer calls them: the rotary module's
forward (once per model forward) and apply_rotary_pos_emb (once per layer), for a decode step
(one token at position 4095) and a 512-token prefill, Llama-3-8B shapes (32 query heads,
8 key/value heads, head_dim 128, theta 500000), torch on one thread. Medians of 9
repetitions, the four rows of a case interleaved in each repetition.

Usage: python python/benchmarks/hf_rope.py   (needs torch and transformers)
"""

import statistics
import timeit

import torch
from transformers import LlamaConfig
from transformers.models.llama import modeling_llama as llama

import posenc.hf as phf


def main():
    torch.set_num_threads(1)
    config = LlamaConfig(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                         rope_theta=500000.0, max_position_embeddings=8192)
    hf_rotary = llama.LlamaRotaryEmbedding(config)
    posenc_rotary = phf.RotaryEmbedding(config, "accurate")
    print(f"{'case':<8} {'row':<22} {'HF us':>10} {'posenc us':>10} {'HF/posenc':>10}")
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
        for _ in range(9):
            for key, fn in rows.items():
                times[key].append(timeit.timeit(fn, number=number) / number * 1e6)
        for row in ("rotary forward", "apply (q and k)"):
            hf, ours = (statistics.median(times[(row, who)]) for who in ("HF", "posenc"))
            print(f"{name:<8} {row:<22} {hf:10.1f} {ours:10.1f} {hf / ours:10.2f}")


if __name__ == "__main__":
    main()
