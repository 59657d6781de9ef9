#!/usr/bin/env python3
"""Golden RoPE data from HuggingFace transformers itself, for tests/rope_golden_test.cc.

For each model configuration below this script builds the model's own config class and
rotary-embedding module from transformers, and writes to tests/data/hf_rope_golden.txt:
HF's inverse frequencies (float64 and float32), HF's attention factor, and the Q and K
that HF's own apply function produces at a few positions (0, 1, 4095, 100000, 1000000 and
the configuration's original-length boundary) from a fixed, seeded random Q (2 heads) and
K (1 head), both in float64 and in HF's float32 recipe. Nothing here re-implements a
frequency formula: every number comes out of transformers' code.

Run by hand when a configuration (or transformers) changes; CI only reads the committed
file and needs neither torch nor transformers. It installs nothing itself:

    python3 -m venv /work/venv-hf                                # outside the repository
    /work/venv-hf/bin/pip install torch transformers numpy       # CPU is enough
    /work/venv-hf/bin/python tests/data/hf_rope_golden.py        # -o to write elsewhere

(torch from PyPI brings its CUDA wheels, ~2 GB on disk; they are not used.) Written with
transformers 5.x, whose config classes accept a config.json's `rope_scaling` and
`rope_theta`, and whose rotary modules take (x, position_ids).

Float64: HF builds inv_freq and cos/sin in float32 (`.float()`, `dtype=torch.float`,
`torch.tensor(..., dtype=torch.float32)`). To obtain HF's float64 values the very same HF
functions run inside `float64_everywhere()`, which, for the duration of the call only, makes
every float32 request of torch a float64 one: Tensor.float -> Tensor.double, float32
dtypes given to Tensor.to / torch.arange / torch.tensor / torch.zeros / torch.ones become
float64, and the default dtype is float64 (for int / int divisions). Python-side scalar
math in HF (math.log, `**` on floats) is double already. The script checks that the
results really are float64, and that they differ from the float32 run.

Dynamic NTK and LongRoPE depend on the sequence length, which HF takes from the largest
position id (`seq_len = max(position_ids) + 1`) in a decorator around the module's forward.
Each such case first calls the decorated forward with the single position seq_len - 1 (so
HF updates its frequencies for that length), then rotates the test positions with the
undecorated forward (`forward.__wrapped__`), i.e. with the frequencies HF chose for that
length. Other types do not depend on the sequence length (seq_len 0 in the file).

File format (one record per line, whitespace-separated; floats as Python float.hex, float32
values written with trailing zero digits dropped):
    posenc-hf-rope-golden 1
    transformers <version> / torch <version>
    case <name>                      starts a case; `end` closes it
    model <hub id> / rope_type <HF rope_type> / layout neox|gptj
    head_dim <D> / rotary_dim <R> / base <hex>
    param <key> <hex>                numeric rope_scaling entries, HF's names, plus the
                                     config's max_position_embeddings
    list <key> <n> <hex>...          short_factor / long_factor
    seq_len <n>                      0: not used by this type
    attention_factor <hex>           HF's attention_scaling (cos and sin are multiplied by it)
    inv_freq_f64 <n> <hex>... / inv_freq_f32 <n> <hex>...
    heads <n_q> <n_k> / positions <n> <int>...
    q_in <head> <D> <hex>...         float32 inputs (the same at every position)
    k_in <head> <D> <hex>...
    q_f64 <pos index> <head> <D> <hex>...   HF output, float64 run
    q_f32 <pos index> <head> <D> <hex>...   HF output, float32 run (HF's own recipe)
    k_f64 ... / k_f32 ...
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_float64  # noqa: E402  (beside this script)

import numpy as np
import torch
import transformers
from transformers import (DeepseekV2Config, GPTJConfig, GPTNeoXConfig, LlamaConfig, Phi3Config,
                          Qwen2Config)
from transformers.models.deepseek_v2 import modeling_deepseek_v2 as deepseek_v2
from transformers.models.gpt_neox import modeling_gpt_neox as gpt_neox
from transformers.models.gptj import modeling_gptj as gptj
from transformers.models.llama import modeling_llama as llama
from transformers.models.phi3 import modeling_phi3 as phi3
from transformers.models.qwen2 import modeling_qwen2 as qwen2

BASE_POSITIONS = [0, 1, 4095, 100000, 1000000]
Q_HEADS, K_HEADS = 2, 1
SEED = 20240901

# microsoft/Phi-3-mini-128k-instruct, config.json rope_scaling (the revision of mid-2024, type
# "longrope"). This machine cannot reach the Hub, so the factors are written out here; pass
# --phi3-config with a downloaded config.json to use the file itself.
PHI3_MINI_128K_LONG = [
    1.0700000524520874, 1.1200000047683716, 1.149999976158142, 1.4199999570846558,
    1.5699999332427979, 1.7999999523162842, 2.129999876022339, 2.129999876022339,
    3.009999990463257, 5.910000324249268, 6.950000286102295, 9.070000648498535,
    9.930000305175781, 10.710000038146973, 11.130000114440918, 14.609999656677246,
    15.409998893737793, 19.809999465942383, 37.279998779296875, 38.279998779296875,
    38.599998474121094, 40.12000274658203, 46.20000457763672, 50.940006256103516,
    53.66000747680664, 54.9373893737793, 56.89738845825195, 57.28738784790039,
    59.98738479614258, 60.86738586425781, 60.887386322021484, 61.71739196777344,
    62.91739273071289, 62.957393646240234, 63.41739273071289, 63.8173942565918,
    63.83739471435547, 63.897396087646484, 63.93739700317383, 64.06739807128906,
    64.11434936523438, 64.12435150146484, 64.15435028076172, 64.19435119628906,
    64.24435424804688, 64.57435607910156, 64.69000244140625, 64.76000213623047]
PHI3_MINI_128K_SHORT = [
    1.1, 1.1, 1.1, 1.3000000000000003, 1.3500000000000003, 1.3500000000000003,
    1.4000000000000004, 1.5500000000000005, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.0500000000000007,
    2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.0500000000000007,
    2.0500000000000007, 2.1000000000000005, 2.1000000000000005, 2.1500000000000004, 2.25,
    2.25, 2.25, 2.25, 2.25, 2.3999999999999995, 2.4499999999999993, 2.499999999999999,
    2.6999999999999984, 2.6999999999999984, 2.7499999999999982, 2.799999999999998,
    2.8999999999999977, 3.049999999999997]


# --- float64 evaluation of HF's own code ------------------------------------------------------

def float64_everywhere():
    """Every float32 request torch sees becomes float64 (see the module docstring)."""
    return torch_float64.float64_everywhere(torch)


def in_precision(precision, fn, *args):
    """fn(*args) with HF's float32 code as is ("f32") or inside float64_everywhere ("f64")."""
    if precision == "f32":
        return fn(*args)
    with float64_everywhere():
        return fn(*args)


def expect_dtype(tensor, precision, what):
    want = torch.float64 if precision == "f64" else torch.float32
    if tensor.dtype not in (want, torch.complex128 if precision == "f64" else torch.complex64):
        sys.exit(f"{what}: HF returned {tensor.dtype} in the {precision} run")


# --- one model family: its config class, rotary module and apply function ---------------------

class NeoxFamily:
    """Models whose rotary module returns (cos, sin) and whose apply_rotary_pos_emb rotates
    halves: Llama, Qwen2, Phi-3, GPT-NeoX."""
    layout = "neox"

    def __init__(self, module, rotary_cls):
        self.module, self.rotary_cls = module, rotary_cls

    def make_rotary(self, config):
        return self.rotary_cls(config)

    @staticmethod
    def inv_freq(rotary):
        return rotary.inv_freq.clone(), float(rotary.attention_scaling)

    def rotate(self, rotary, q, k, positions, dtype):
        """q [1, Hq, T, D], k [1, Hk, T, D] at positions [T]: HF's rotated q, k."""
        position_ids = torch.tensor([positions], dtype=torch.int64)
        forward = type(rotary).forward.__wrapped__  # the frequencies stay as they are
        cos, sin = forward(rotary, torch.zeros(1, dtype=dtype), position_ids)
        return self.module.apply_rotary_pos_emb(q, k, cos, sin)


class DeepseekV2Family(NeoxFamily):
    """DeepSeek-V2: complex (interleaved) pairs, freqs_cis from the rotary module."""
    layout = "gptj"

    def rotate(self, rotary, q, k, positions, dtype):
        position_ids = torch.tensor([positions], dtype=torch.int64)
        forward = type(rotary).forward.__wrapped__
        freqs_cis = forward(rotary, torch.zeros(1, dtype=dtype), position_ids)
        return self.module.apply_rotary_emb(q, k, freqs_cis)


class GptjFamily:
    """GPT-J: a sin/cos table over positions, interleaved pairs, rotary_dim < head_dim (the
    pass-through part is concatenated back as GPTJAttention.forward does)."""
    layout = "gptj"

    def make_rotary(self, config):
        return gptj.GPTJRotaryEmbedding(config)

    @staticmethod
    def inv_freq(rotary):
        # HF keeps no inv_freq for GPT-J; row 1 of its own table's angle (1 * inv_freq) is it,
        # captured from create_sinusoidal_positions' call to torch.sin.
        captured = []
        real_sin = torch.sin

        def spy(x, *a, **k):
            captured.append(x.clone())
            return real_sin(x, *a, **k)

        torch.sin = spy
        try:
            gptj.create_sinusoidal_positions(2, rotary.pos_embd_dim)
        finally:
            torch.sin = real_sin
        return captured[0][1].clone(), 1.0

    def rotate(self, rotary, q, k, positions, dtype):
        # GPT-J's attention works on [batch, seq, heads, head_dim].
        position_ids = torch.tensor([positions], dtype=torch.int64)
        sin, cos = rotary(torch.zeros(1, dtype=dtype), position_ids)
        r = rotary.pos_embd_dim
        out = []
        for x in (q, k):
            x = x.transpose(1, 2)
            x_rot = gptj.apply_rotary_pos_emb(x[..., :r], sin, cos)
            out.append(torch.cat([x_rot, x[..., r:]], dim=-1).transpose(1, 2))
        return tuple(out)


LLAMA = NeoxFamily(llama, llama.LlamaRotaryEmbedding)
QWEN2 = NeoxFamily(qwen2, qwen2.Qwen2RotaryEmbedding)
PHI3 = NeoxFamily(phi3, phi3.Phi3RotaryEmbedding)
NEOX = NeoxFamily(gpt_neox, gpt_neox.GPTNeoXRotaryEmbedding)
DEEPSEEK_V2 = DeepseekV2Family(deepseek_v2, deepseek_v2.DeepseekV2RotaryEmbedding)
GPTJ = GptjFamily()


# --- the configurations -------------------------------------------------------------------------

def configurations(phi3_config):
    """(case name, hub id, family, config class, config.json-like kwargs, head_dim, seq_lens)."""
    phi3_scaling = {"type": "longrope", "short_factor": PHI3_MINI_128K_SHORT,
                    "long_factor": PHI3_MINI_128K_LONG}
    phi3_original = 4096
    if phi3_config:
        loaded = json.loads(Path(phi3_config).read_text())
        phi3_scaling = loaded["rope_scaling"]
        phi3_original = loaded["original_max_position_embeddings"]
    return [
        ("llama3.1-8b", "meta-llama/Llama-3.1-8B", LLAMA, LlamaConfig,
         dict(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
              max_position_embeddings=131072, rope_theta=500000.0,
              rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
         128, [0]),
        ("qwen2.5-7b-yarn", "Qwen/Qwen2.5-7B-Instruct", QWEN2, Qwen2Config,
         dict(hidden_size=3584, num_attention_heads=28, num_key_value_heads=4,
              max_position_embeddings=32768, rope_theta=1000000.0,
              rope_scaling={"type": "yarn", "factor": 4.0,
                            "original_max_position_embeddings": 32768}),
         128, [0]),
        ("deepseek-v2-yarn", "deepseek-ai/DeepSeek-V2", DEEPSEEK_V2, DeepseekV2Config,
         dict(hidden_size=5120, num_attention_heads=128, qk_rope_head_dim=64,
              qk_nope_head_dim=128, max_position_embeddings=163840, rope_theta=10000.0,
              rope_scaling={"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1,
                            "mscale": 0.707, "mscale_all_dim": 0.707,
                            "original_max_position_embeddings": 4096}),
         64, [0]),
        ("phi3-mini-128k-longrope", "microsoft/Phi-3-mini-128k-instruct", PHI3, Phi3Config,
         dict(hidden_size=3072, num_attention_heads=32, num_key_value_heads=32,
              max_position_embeddings=131072, original_max_position_embeddings=phi3_original,
              rope_theta=10000.0, rope_scaling=phi3_scaling),
         96, [phi3_original, phi3_original + 1]),  # short, then long: HF switches on seq_len > 4096
        ("llama2-7b-dynamic", "meta-llama/Llama-2-7b-hf", LLAMA, LlamaConfig,
         dict(hidden_size=4096, num_attention_heads=32, num_key_value_heads=32,
              max_position_embeddings=4096, rope_theta=10000.0,
              rope_scaling={"type": "dynamic", "factor": 2.0}),
         128, [4096, 4097, 1000001]),
        ("vicuna-7b-16k-linear", "lmsys/vicuna-7b-v1.5-16k", LLAMA, LlamaConfig,
         dict(hidden_size=4096, num_attention_heads=32, num_key_value_heads=32,
              max_position_embeddings=16384, rope_theta=10000.0,
              rope_scaling={"type": "linear", "factor": 4.0}),
         128, [0]),
        ("gpt-neox-20b", "EleutherAI/gpt-neox-20b", NEOX, GPTNeoXConfig,
         dict(hidden_size=6144, num_attention_heads=64, rotary_pct=0.25, rotary_emb_base=10000,
              max_position_embeddings=2048),
         96, [0]),
        # GPT-J's table covers n_positions rows (2048 in the model); it is made long enough
        # for the test positions, which changes no value of the rows it had.
        ("gpt-j-6b", "EleutherAI/gpt-j-6b", GPTJ, GPTJConfig,
         dict(n_embd=4096, n_head=16, rotary_dim=64, n_positions=1000001),
         256, [0]),
    ]


def rope_parameters(config):
    # GPT-J's config has no RoPE parameters: create_sinusoidal_positions hard-codes base 10000.
    params = dict(getattr(config, "rope_parameters", None) or {"rope_theta": 10000.0})
    params.setdefault("rope_type", "default")
    return params


def positions_for(params):
    extra = []
    original = params.get("original_max_position_embeddings")
    if original:
        extra = [original - 1, original]
    return sorted(set(BASE_POSITIONS + extra))


def run_case(family, config_cls, kwargs, seq_len, positions, q32, k32, precision):
    """HF's frequencies, attention factor and rotated q, k in one precision."""
    config = config_cls(**kwargs)
    rotary = family.make_rotary(config)
    if seq_len:  # let HF's decorator pick the frequencies for this sequence length
        rotary(torch.zeros(1), torch.tensor([[seq_len - 1]], dtype=torch.int64))
    inv_freq, attention = family.inv_freq(rotary)
    dtype = torch.float64 if precision == "f64" else torch.float32
    q = torch.from_numpy(q32).to(dtype)[None, :, None, :].expand(1, Q_HEADS, len(positions), -1)
    k = torch.from_numpy(k32).to(dtype)[None, :, None, :].expand(1, K_HEADS, len(positions), -1)
    q_out, k_out = family.rotate(rotary, q.contiguous(), k.contiguous(), positions, dtype)
    for tensor, what in ((inv_freq, "inv_freq"), (q_out, "q"), (k_out, "k")):
        expect_dtype(tensor, precision, what)
    return inv_freq, attention, q_out[0].numpy(), k_out[0].numpy()


def hex64(x):
    return float(x).hex()


def hex32(x):
    """A float32 value as float.hex without the trailing zero digits (0x1.8p+1, 0x0p+0)."""
    mantissa, exponent = float(np.float32(x)).hex().split("p")
    whole, _, fraction = mantissa.partition(".")
    fraction = fraction.rstrip("0")
    return whole + ("." + fraction if fraction else "") + "p" + exponent


def write_case(out, name, model_id, family, config_cls, kwargs, head_dim, seq_len, rng):
    config = config_cls(**kwargs)
    params = rope_parameters(config)
    positions = positions_for(params)
    q32 = rng.standard_normal((Q_HEADS, head_dim)).astype(np.float32)
    k32 = rng.standard_normal((K_HEADS, head_dim)).astype(np.float32)
    runs = {p: in_precision(p, run_case, family, config_cls, kwargs, seq_len, positions, q32, k32,
                            p) for p in ("f64", "f32")}
    inv64, att64 = runs["f64"][0], runs["f64"][1]
    inv32, att32 = runs["f32"][0], runs["f32"][1]
    if att64 != att32:
        sys.exit(f"{name}: attention factor differs between runs ({att64} vs {att32})")
    if torch.equal(inv64, inv32.double()) and params["rope_type"] != "default":
        print(f"note: {name}: float64 and float32 inv_freq are identical", file=sys.stderr)
    rotary_dim = 2 * inv64.numel()

    out.write(f"case {name}\nmodel {model_id}\nrope_type {params['rope_type']}\n")
    out.write(f"layout {family.layout}\nhead_dim {head_dim}\nrotary_dim {rotary_dim}\n")
    out.write(f"base {hex64(params['rope_theta'])}\n")
    for key in sorted(params):
        value = params[key]
        if key in ("rope_type", "type", "rope_theta"):
            continue
        if isinstance(value, (list, tuple)):
            out.write(f"list {key} {len(value)} {' '.join(hex64(v) for v in value)}\n")
        elif isinstance(value, (bool, int, float)) and value is not None:
            out.write(f"param {key} {hex64(float(value))}\n")
    out.write(f"param max_position_embeddings {hex64(float(config.max_position_embeddings))}\n")
    out.write(f"seq_len {seq_len}\nattention_factor {hex64(att64)}\n")
    out.write(f"inv_freq_f64 {inv64.numel()} {' '.join(hex64(v) for v in inv64.tolist())}\n")
    out.write(f"inv_freq_f32 {inv32.numel()} {' '.join(hex32(v) for v in inv32.tolist())}\n")
    out.write(f"heads {Q_HEADS} {K_HEADS}\n")
    out.write(f"positions {len(positions)} {' '.join(str(p) for p in positions)}\n")
    for label, data in (("q_in", q32), ("k_in", k32)):
        for h, row in enumerate(data):
            out.write(f"{label} {h} {head_dim} {' '.join(hex32(v) for v in row)}\n")
    for view, index in (("q", 2), ("k", 3)):
        for precision, fmt in (("f64", hex64), ("f32", hex32)):
            values = runs[precision][index]  # [heads, T, D]
            for t in range(len(positions)):
                for h in range(values.shape[0]):
                    row = " ".join(fmt(v) for v in values[h, t].tolist())
                    out.write(f"{view}_{precision} {t} {h} {head_dim} {row}\n")
    out.write("end\n")
    print(f"{name}: seq_len {seq_len}, R {rotary_dim}, attention factor {att64!r}",
          file=sys.stderr)


def main():
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default=here / "hf_rope_golden.txt")
    parser.add_argument("--phi3-config", help="Phi-3-mini-128k-instruct's config.json to use "
                        "instead of the factors written in this script")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the same reductions on every run
    rng = np.random.default_rng(SEED)
    with open(args.output, "w") as out:
        out.write("posenc-hf-rope-golden 1\n")
        out.write(f"transformers {transformers.__version__}\ntorch {torch.__version__}\n")
        for name, model_id, family, cls, kwargs, head_dim, seq_lens in configurations(
                args.phi3_config):
            for seq_len in seq_lens:
                case = name if len(seq_lens) == 1 else f"{name}@{seq_len}"
                write_case(out, case, model_id, family, cls, kwargs, head_dim, seq_len, rng)
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
