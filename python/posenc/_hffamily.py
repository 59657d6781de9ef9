"""The per-family keys of HF configs that decide the rotary size, the base or the pair layout
(RopePlan.from_hf_config), read or refused: never left to a default that is not the model's.

Most configs carry `rope_theta`, `partial_rotary_factor` and `head_dim` (or hidden_size //
num_attention_heads). Some families name them otherwise, or their config classes fill in
other defaults when a config.json leaves a key out:
  - GPT-NeoX (and GPT-NeoX-Japanese, Qwen-1's remote code): `rotary_pct` is the
    partial_rotary_factor, `rotary_emb_base` the base (GPTNeoXConfig copies them so);
  - GPT-J, CodeGen: `rotary_dim`, the rotated size itself (interleaved pairs);
  - DeepSeek-V2/V3 (and MiniCPM3): `qk_rope_head_dim`, the size of the rotated part of each
    query/key head (q_pe, k_pe), rotated in interleaved pairs unless `rope_interleave` is
    false;
  - Gemma 3: `rope_local_base_freq`, the base of the sliding-window layers (default RoPE),
    while the global layers use rope_theta and rope_scaling: from_hf_config's layer_type
    picks one;
  - Phi-3-small: `rope_embedding_base` (read in _hfparse).
  Refused (ValueError naming the key): `rope_ratio` (ChatGLM's remote code), the
  flash-attn-style `rotary_emb_fraction` / `rotary_emb_dim` / `rotary_emb_scale_base` /
  `rotary_emb_interleaved`, and configs of models without RoPE (`alibi` true,
  `position_embedding_type` other than "rotary", `use_rope` false, BLOOM, GPT-2, OPT,
  GPTBigCode).
The defaults below are those of the config classes of transformers 4.49 (python/tests
checks them, and that no other model type of the installed transformers has a default that
differs from rope_theta 10000, partial_rotary_factor 1, head_dim hidden_size //
num_attention_heads); they fill in keys a config dict of that model_type leaves out.
"""

#: model_type -> {key: the config class's default when the key is absent}, where it is not
#: the generic one (rope_theta 10000, partial_rotary_factor 1, head_dim hidden_size //
#: num_attention_heads). rotary_pct / rotary_emb_base / rotary_dim are the families' own keys.
FAMILY_DEFAULTS = {
    "bamba": {"partial_rotary_factor": 0.5},
    "codegen": {"rotary_dim": 64},
    "emu3_text_model": {"rope_theta": 1000000.0},
    "fuyu": {"rope_theta": 25000.0, "partial_rotary_factor": 0.5},
    "gemma": {"head_dim": 256},
    "gemma2": {"head_dim": 256},
    "glm": {"partial_rotary_factor": 0.5, "head_dim": 128},
    "gpt_neox": {"rotary_pct": 0.25, "rotary_emb_base": 10000},
    "gpt_neox_japanese": {"rotary_pct": 1.0, "rotary_emb_base": 10000},
    "gptj": {"rotary_dim": 64},
    "helium": {"rope_theta": 100000.0, "head_dim": 128},
    "mixtral": {"rope_theta": 1000000.0},
    "mllama_text_model": {"rope_theta": 500000.0},
    "moonshine": {"partial_rotary_factor": 0.9},
    "nemotron": {"partial_rotary_factor": 0.5},
    "persimmon": {"rope_theta": 25000.0, "partial_rotary_factor": 0.5},
    "phi": {"partial_rotary_factor": 0.5},
    "phimoe": {"rope_theta": 1000000.0},
    "qwen2_5_vl": {"rope_theta": 1000000.0},
    "qwen2_vl": {"rope_theta": 1000000.0},
    "recurrent_gemma": {"partial_rotary_factor": 0.5},
    "stablelm": {"partial_rotary_factor": 0.25},
}

#: Model types whose attention rotates interleaved pairs (x[2i], x[2i+1]): posenc's "gptj"
#: layout (transformers 4.49's rotate_every_two, or rotate_half on ::2 with cos/sin
#: repeat_interleave'd). Every other family rotates halves: "neox".
INTERLEAVED = frozenset({"gptj", "codegen", "cohere", "cohere2", "glm", "helium", "moonshine"})

#: Model types without RoPE (learned, ALiBi or relative positions).
NO_ROPE = {"bloom": "ALiBi", "gpt2": "learned positions", "gpt_bigcode": "learned positions",
           "opt": "learned positions"}

#: Keys refused, with why.
REFUSED = {
    "rope_ratio": "ChatGLM's remote code scales the base by it and rotates kv_channels // 2 "
                  "of each head; posenc does not read ChatGLM configs",
    "rotary_emb_fraction": "a flash-attn style config (NomicBERT and kin); give "
                           "partial_rotary_factor instead",
    "rotary_emb_dim": "a flash-attn style config; give partial_rotary_factor or head_dim",
    "rotary_emb_scale_base": "xPos scaling, which posenc does not implement",
    "rotary_emb_interleaved": "a flash-attn style config; pass layout='gptj' to the kernels "
                              "and drop the key",
}

LAYER_TYPES = ("full_attention", "sliding_attention")


def layout_of(model_type, interleave):
    """The pair layout of a family ("neox" or "gptj"); interleave: DeepSeek's
    rope_interleave (None when absent)."""
    if interleave is not None:
        return "gptj" if interleave else "neox"
    return "gptj" if model_type in INTERLEAVED else "neox"


def refuse_non_rope(get, where):
    """ValueError for a config that says its model has no RoPE, or holds a refused key. get:
    key -> value or None."""
    model_type = get("model_type")
    if model_type in NO_ROPE:
        raise ValueError(f"model_type {model_type!r} has no RoPE ({NO_ROPE[model_type]}); "
                         "there is no rotary plan to make")
    for key, why in REFUSED.items():
        if get(key) is not None:
            raise ValueError(f"{where} has {key!r}, which posenc does not read: {why}")
    alibi = get("alibi")
    attn = get("attn_config")
    if alibi is None and isinstance(attn, dict):
        alibi = attn.get("alibi")
    if alibi:
        raise ValueError(f"{where} has alibi = {alibi!r}: the model uses ALiBi, not RoPE "
                         "(posenc.alibi_slopes / alibi_add / softmax(slopes=...))")
    kind = get("position_embedding_type")
    if kind is not None and kind not in ("rotary", "rope"):
        raise ValueError(f"{where} has position_embedding_type = {kind!r}: not RoPE")
    if get("use_rope") is False:
        raise ValueError(f"{where} has use_rope = False: the model does not use RoPE")
