#!/usr/bin/env python3
"""Golden float32 inv_freq from HuggingFace transformers itself, under each of PyTorch's CPU
kernel capabilities, for tests/rope_golden_test.cc (posenc_rope_plan_create_hf_f32).

HF computes the default inv_freq as `1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))`
in float32. On a CPU, torch's `base ** tensor` runs ATen's vectorised loop: whole blocks of
two vectors through SLEEF's u10 powf (with FMA), the remaining elements through the C
library's powf; with ATEN_CPU_CAPABILITY=default every element goes through the C library.
The vector holds 16 floats under the AVX512 capability and 8 under AVX2, so the split, and
with it a few bits of inv_freq, depends on the capability torch picked. This script runs
transformers' own Llama rotary module in one fresh process per capability and writes, for a
set of (rope_theta, head_dim) chosen where the capabilities differ and where they do not:

    posenc-hf-f32-pow-golden 1
    transformers <version>
    torch <version>
    case <capability> <vector floats: 16, 8 or 0> <rope_theta as float.hex> <head_dim> <n> <hex>...

Run by hand (it installs nothing; see tests/data/hf_rope_golden.py for a venv):
    /work/venv-hf/bin/python tests/data/hf_f32_pow_golden.py   # -o to write elsewhere
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CAPABILITIES = (("avx512", 16), ("avx2", 8), ("default", 0))
THETAS = (10000.0, 500000.0, 1000000.0, 1234.5678)
HEAD_DIMS = (24, 48, 64, 96, 128, 160, 200, 256)


def child():
    """In a process whose ATEN_CPU_CAPABILITY is set: HF's inv_freq for every case, as JSON."""
    import torch
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    out = {"capability": torch.backends.cpu.get_cpu_capability(), "cases": []}
    for theta in THETAS:
        for head_dim in HEAD_DIMS:
            config = LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                                 rope_theta=theta, max_position_embeddings=4096)
            inv = LlamaRotaryEmbedding(config=config).inv_freq  # keyword: 4.4x and 5.x
            assert inv.dtype == torch.float32
            out["cases"].append([theta, head_dim, [float(v).hex() for v in inv.tolist()]])
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", default=os.path.join(HERE, "hf_f32_pow_golden.txt"))
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        child()
        return
    import torch
    import transformers

    lines = ["posenc-hf-f32-pow-golden 1", f"transformers {transformers.__version__}",
             f"torch {torch.__version__}"]
    for name, floats in CAPABILITIES:
        env = dict(os.environ, ATEN_CPU_CAPABILITY=name)
        res = json.loads(subprocess.run([sys.executable, __file__, "--child"], env=env, check=True,
                                        capture_output=True, text=True).stdout)
        # torch 2.4 calls the scalar kernels "NO AVX"
        if res["capability"].lower() not in (name, "no avx" if name == "default" else name):
            sys.exit(f"torch picked {res['capability']} for ATEN_CPU_CAPABILITY={name}")
        for theta, head_dim, values in res["cases"]:
            lines.append(f"case {name} {floats} {theta.hex()} {head_dim} {len(values)} "
                         + " ".join(values))
    with open(args.o, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
