"""Cross-check of posenc_mrope_f32 against HuggingFace transformers itself (run by hand; CI
   does not need torch): the rotary embeddings of Qwen2-VL (contiguous mrope_section) and
   Qwen3-VL (interleaved) recompose cos/sin with their own recomposition_frequencies, in
   float64, from 3-row position ids (text tokens with equal rows, vision tokens distinct,
   positions up to 10^5); every ISA of posenc must be within its RoPE bound.
   Usage: PYTHONPATH=python POSENC_LIBRARY=<build>/libposenc.so <venv with torch,
   transformers>/bin/python tests/data/hf_mrope_check.py
"""
import numpy as np, torch, posenc
from transformers.models.qwen2_vl import modeling_qwen2_vl as m2
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig
from transformers.models.qwen3_vl import modeling_qwen3_vl as m3
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig
torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(1)
L, H, D = 64, 3, 128
pos = np.stack([rng.integers(0, 100000, L), rng.integers(0, 100000, L), rng.integers(0, 100000, L)])
pos[:, :10] = pos[0, :10]  # text tokens
for name, cfgcls, mod, sec, inter in [("Qwen2-VL", Qwen2VLTextConfig, m2, [16,24,24], False),
                                      ("Qwen3-VL", Qwen3VLTextConfig, m3, [24,20,20], True)]:
    rp = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": sec}
    if inter: rp["mrope_interleaved"] = True
    cfg = cfgcls(hidden_size=H*D, num_attention_heads=H, num_key_value_heads=H, head_dim=D, rope_parameters=rp)
    cls = [getattr(mod, n) for n in dir(mod) if n.endswith("RotaryEmbedding") and "Vision" not in n][0]
    emb = cls(config=cfg)
    emb.inv_freq = torch.tensor(1.0 / (1e6 ** (np.arange(0, D, 2) / D)), dtype=torch.float64)  # float64 inv_freq
    x = torch.tensor(rng.standard_normal((1, L, H, D)).astype(np.float32), dtype=torch.float64)
    # HF's forward casts positions to float32; do it in float64 by hand through the same recomposition
    pid = torch.tensor(pos, dtype=torch.float64)[:, None, :]
    freqs = pid[..., None] * emb.inv_freq
    cos = emb.recomposition_frequencies(freqs.cos()); sin = emb.recomposition_frequencies(freqs.sin())
    q = x.transpose(1, 2)  # [1, H, L, D]
    out = (q * cos[:, None] + mod.rotate_half(q) * sin[:, None]).transpose(1, 2)[0].numpy()
    worst = {}
    for isa in posenc.available_isas():
        posenc.set_isa(isa)
        y = x[0].numpy().astype(np.float32).copy()
        with posenc.RopePlan(D, 1e6) as plan:
            posenc.mrope(plan, sec, y, positions=pos, interleaved=inter)
        mag = np.abs(x[0].numpy()[..., :64]) + np.abs(x[0].numpy()[..., 64:])
        mag = np.concatenate([mag, mag], -1)
        worst[isa] = float(np.max(np.abs(y - out) / mag))
    print(name, "max |posenc - HF float64| / (|u|+|v|):", {k: f"{v:.3g}" for k, v in worst.items()})
    assert max(worst.values()) <= 2.0 ** -22 + 2.0 ** -23, f"{name}: above the bound"
print("bound: 2^-22 + 2^-23 = %.3g" % (2.0 ** -22 + 2.0 ** -23))
