"""RopePlan.from_hf_config / posenc._hfconfig against HuggingFace transformers.

Tests marked by the `hf` fixture build transformers' own config classes (LlamaConfig,
Phi3Config, PhiConfig, Qwen2VLConfig, LlavaConfig) and compare the plan with what
transformers itself computes: `ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", seq_len=...)`
(transformers 4.x signature: config, device, seq_len) and the rotary modules' forward.
They are skipped, with the reason, when torch or transformers is missing; the dict-only
tests (transformers 5.x `rope_parameters` dicts, errors, resolve_plan) always run.

Precision. HF computes inv_freq in float32, and its float32 exponent 2i/R alone is off by
up to ln(base) * 2^-24 relative (for base 1e6 about 7 float32 ulp; Llama 3's smoothing
amplifies the error further, to about 26 ulp at factor 32), so a fixed "n ulp" bound does not
hold for every config. Each case therefore checks two things:
  - HF's own functions run in float64 (float64_everywhere below turns torch's float32
    requests into float64 for the call): the plan agrees to 1e-14 relative;
  - HF's float32 inv_freq: the plan is no further from it than HF's own float64 result is,
    plus one float32 ulp: |plan - hf32| <= |hf64 - hf32| + spacing(hf32).
The attention factor is a Python float in HF (math.log / math.sqrt in double); the plan's
must equal it exactly.
"""

import copy
import logging
import math
import re
import threading
import types

import numpy as np
import pytest

import posenc
from posenc import _hfconfig


def from_hf(config, seq_len=None, f32=False, **kw):
    return posenc.RopePlan.from_hf_config(config, seq_len=seq_len, f32=f32, **kw)


# --- transformers, and HF's code in float64 -------------------------------------------------

@pytest.fixture(scope="module")
def hf():
    """(torch, transformers, ROPE_INIT_FUNCTIONS); skips, with the reason, when either
    cannot be imported (not installed, or an install that fails to import)."""
    try:
        import torch
    except ImportError as e:
        pytest.skip(f"torch cannot be imported: {e}")
    try:
        import transformers
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    except ImportError as e:
        pytest.skip(f"transformers cannot be imported: {e}")
    # HF warns about Phi-3's config-level original_max_position_embeddings and such
    logging.getLogger("transformers").setLevel(logging.ERROR)
    return types.SimpleNamespace(torch=torch, tf=transformers, init=ROPE_INIT_FUNCTIONS)


def float64_everywhere(torch):
    """HF's float32 code computed in float64 for the block: tests/data/torch_float64.py,
    shared with the golden-file generator."""
    import sys
    from pathlib import Path
    data = Path(__file__).resolve().parents[2] / "tests" / "data"
    if not (data / "torch_float64.py").is_file():
        pytest.skip(f"no {data}/torch_float64.py: tests run outside the repository")
    if str(data) not in sys.path:
        sys.path.insert(0, str(data))
    import torch_float64
    return torch_float64.float64_everywhere(torch)


def hf_inv_freq(hf, config, rope_type, seq_len=None):
    """(float32 inv_freq, float64 inv_freq, attention factor) from HF's ROPE_INIT_FUNCTIONS."""
    fn = hf.init[rope_type]
    inv32, att = fn(config, "cpu", seq_len=seq_len)
    with float64_everywhere(hf.torch):
        inv64, att64 = fn(config, "cpu", seq_len=seq_len)
    assert inv32.dtype == hf.torch.float32 and inv64.dtype == hf.torch.float64
    assert att64 == att
    return inv32.numpy(), inv64.numpy(), att


def assert_matches_hf(plan, inv32, inv64, att):
    freqs = plan.freqs
    assert freqs.dtype == np.float64 and freqs.shape == inv32.shape
    np.testing.assert_allclose(freqs, inv64, rtol=1e-14, atol=0)
    own_error = np.abs(inv64 - inv32.astype(np.float64))
    bound = own_error + np.spacing(inv32).astype(np.float64)
    assert np.all(np.abs(freqs - inv32.astype(np.float64)) <= bound)
    assert isinstance(att, float)
    assert plan.attention_factor == att


def check_config(hf, config, rope_type, seq_lens=(None,), **kw):
    """The plan of the config object and of its to_dict() agree with HF at each seq_len
    (kw: from_hf_config's transformers=)."""
    for seq_len in seq_lens:
        inv32, inv64, att = hf_inv_freq(hf, config, rope_type, seq_len)
        base = from_hf(config, **kw)
        for plan in (from_hf(config, seq_len, **kw), from_hf(config.to_dict(), seq_len, **kw),
                     base.hf.for_seq_len(seq_len)):
            assert plan.hf.rope_type == rope_type
            assert_matches_hf(plan, inv32, inv64, att)
        plan32 = from_hf(config, seq_len, f32=True, **kw)
        np.testing.assert_array_equal(plan32.freqs, inv32.astype(np.float64))
        assert plan32.attention_factor == att
        if seq_len is not None:  # what the kernels use for a call reaching seq_len - 1
            assert_matches_hf(_hfconfig.resolve_plan(base, seq_len - 1), inv32, inv64, att)


def v5_dict(config_dict):
    """A transformers 4.x config dict in the layout of transformers 5.x: one rope_parameters
    dict holding rope_type, rope_theta, partial_rotary_factor and, for yarn / longrope /
    llama3, original_max_position_embeddings (5.x's standardize_rope_params)."""
    d = copy.deepcopy(config_dict)
    rp = dict(d.pop("rope_scaling", None) or {})
    rp.setdefault("rope_type", rp.pop("type", "default"))
    rp.pop("type", None)
    rp["rope_theta"] = d.pop("rope_theta", 10000.0)
    if d.get("partial_rotary_factor") is not None:
        rp["partial_rotary_factor"] = d.pop("partial_rotary_factor")
    if rp["rope_type"] in ("llama3", "yarn", "longrope"):
        if d.get("original_max_position_embeddings") is not None:
            rp["original_max_position_embeddings"] = d["original_max_position_embeddings"]
        else:
            rp.setdefault("original_max_position_embeddings", d["max_position_embeddings"])
    d["rope_parameters"] = rp
    return d


def assert_same_plan(a, b):
    np.testing.assert_array_equal(a.freqs, b.freqs)
    assert a.attention_factor == b.attention_factor
    assert a.hf == b.hf


def llama(hf, **kw):
    kw.setdefault("hidden_size", 256)
    kw.setdefault("num_attention_heads", 4)
    return hf.tf.LlamaConfig(**kw)


def phi3_factors(n, seed):
    """Short and long factors as float32 values (as Phi-3's config.json lists them)."""
    rng = np.random.default_rng(seed)
    short = (1.0 + 0.2 * rng.random(n)).astype(np.float32)
    long = (1.0 + 40.0 * rng.random(n)).astype(np.float32)
    return [float(x) for x in short], [float(x) for x in long]


def phi3(hf, **kw):
    short, long = phi3_factors(kw.pop("n_factors", 48), kw.pop("seed", 3))
    kw.setdefault("hidden_size", 3072)
    kw.setdefault("num_attention_heads", 32)
    kw.setdefault("max_position_embeddings", 131072)
    kw.setdefault("original_max_position_embeddings", 4096)
    kw.setdefault("rope_scaling", {"type": "longrope", "short_factor": short,
                                   "long_factor": long})
    return hf.tf.Phi3Config(**kw)


# --- every rope type against transformers ---------------------------------------------------

def test_default(hf):
    check_config(hf, llama(hf), "default")
    check_config(hf, llama(hf, rope_theta=1e6, hidden_size=1024, num_attention_heads=8),
                 "default")


def test_head_dim_given(hf):
    config = llama(hf, hidden_size=512, num_attention_heads=4, head_dim=96, rope_theta=500000.0)
    check_config(hf, config, "default")
    plan = from_hf(config)
    assert (plan.hf.head_dim, plan.hf.rotary_dim, plan.rotary_dim) == (96, 96, 96)
    assert plan.hf.base == 500000.0


def test_linear(hf):
    check_config(hf, llama(hf, rope_scaling={"rope_type": "linear", "factor": 4.0}), "linear")
    # the legacy "type" key, and an int factor
    check_config(hf, llama(hf, rope_scaling={"type": "linear", "factor": 2}), "linear")


def test_dynamic(hf):
    config = llama(hf, max_position_embeddings=2048,
                   rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    check_config(hf, config, "dynamic", (None, 1, 1000, 2047, 2048, 2049, 5000, 100000))
    plan = from_hf(config)
    assert plan.hf.seq_dependent and plan.hf.seq_len_threshold == 2048
    assert _hfconfig.resolve_plan(plan, 2047) is plan  # seq_len 2048: HF's initial inv_freq
    assert _hfconfig.resolve_plan(plan, 2048).hf.seq_len == 2049


def test_partial_rotary_factor(hf):
    # PhiConfig (partial_rotary_factor 0.5 by default), with dynamic scaling
    config = hf.tf.PhiConfig(hidden_size=320, num_attention_heads=4, partial_rotary_factor=0.4,
                             max_position_embeddings=2048,
                             rope_scaling={"type": "dynamic", "factor": 3.0})
    check_config(hf, config, "dynamic", (None, 3000))
    plan = from_hf(config)
    assert (plan.hf.head_dim, plan.hf.rotary_dim) == (80, 32)
    # a 4.x config class that does not declare it still carries it (HF reads it by hasattr)
    config = llama(hf, hidden_size=512, num_attention_heads=4, partial_rotary_factor=0.75,
                   rope_scaling={"rope_type": "linear", "factor": 2.0})
    check_config(hf, config, "linear")
    assert from_hf(config).rotary_dim == 96


@pytest.mark.parametrize("scaling", [
    {"rope_type": "yarn", "factor": 4.0},
    {"rope_type": "yarn", "factor": 16.0, "beta_fast": 16.0, "beta_slow": 2.0},
    {"rope_type": "yarn", "factor": 8.0, "attention_factor": 1.5, "beta_fast": 64.0},
    {"type": "yarn", "factor": 2.5, "beta_fast": None, "attention_factor": None},
])
def test_yarn(hf, scaling):
    config = llama(hf, max_position_embeddings=32768, rope_theta=1e6, rope_scaling=scaling)
    check_config(hf, config, "yarn")
    # transformers 4.49 reads none of original_max_position_embeddings, mscale,
    # mscale_all_dim, truncate (they came later); with original_max_position_embeddings
    # equal to max_position_embeddings (what 5.x fills in) the plan is the same
    d = config.to_dict()
    d["rope_scaling"] = dict(d["rope_scaling"], original_max_position_embeddings=32768)
    assert_same_plan(from_hf(d), from_hf(config))


@pytest.mark.parametrize("seq_lens", [(None, 1, 4095, 4096, 4097, 100000)])
def test_longrope_phi3(hf, seq_lens):
    config = phi3(hf)
    check_config(hf, config, "longrope", seq_lens)
    plan = from_hf(config)
    assert plan.hf.seq_dependent and plan.hf.seq_len_threshold == 4096
    # attention factor: sqrt(1 + ln(131072 / 4096) / ln(4096)), the same for both sets
    assert plan.attention_factor == math.sqrt(1 + math.log(131072 / 4096) / math.log(4096))
    assert plan.hf.for_seq_len(5000).attention_factor == plan.attention_factor


def test_longrope_phi3_partial_and_legacy_types(hf):
    # Phi-4-mini style: partial_rotary_factor 0.75 of head_dim 128
    config = phi3(hf, num_attention_heads=24, partial_rotary_factor=0.75)
    check_config(hf, config, "longrope", (None, 4097))
    assert from_hf(config).rotary_dim == 96
    # Phi3Config renames "su" and "yarn" to "longrope"; a raw config.json dict gets the same
    for legacy in ("su", "yarn"):
        d = config.to_dict()
        d["rope_scaling"] = {k: v for k, v in d["rope_scaling"].items() if k != "type"}
        d["rope_scaling"]["type"] = legacy
        assert_same_plan(from_hf(d), from_hf(config))


def test_longrope_without_config_level_original(hf):
    # a LlamaConfig with longrope: the pretraining length is max_position_embeddings, the
    # factor (only for the attention factor) comes from the dict. transformers 5.x switches
    # to the long factors past that length (ROPE_INIT_FUNCTIONS with seq_len); 4.49's
    # LlamaRotaryEmbedding never passes a seq_len: the short factors at every length
    short, long = phi3_factors(32, 5)
    for extra in ({}, {"attention_factor": 1.3}):
        config = llama(hf, max_position_embeddings=8192,
                       rope_scaling={"rope_type": "longrope", "short_factor": short,
                                     "long_factor": long, "factor": 4.0, **extra})
        check_config(hf, config, "longrope", (None, 8192, 8193), transformers="5")
        inv32, inv64, att = hf_inv_freq(hf, config, "longrope", None)
        plan = from_hf(config, transformers="4")
        assert not plan.hf.seq_dependent
        for seq_len in (None, 8192, 8193, 10 ** 6):
            assert_matches_hf(plan.hf.for_seq_len(seq_len), inv32, inv64, att)
            assert_matches_hf(from_hf(config, seq_len, transformers="4"), inv32, inv64, att)


def test_llama3(hf):
    for hidden, heads, factor in ((4096, 32, 8.0), (3072, 24, 32.0)):
        config = llama(hf, hidden_size=hidden, num_attention_heads=heads, rope_theta=500000.0,
                       max_position_embeddings=131072,
                       rope_scaling={"rope_type": "llama3", "factor": factor,
                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 8192})
        check_config(hf, config, "llama3")


def test_qwen2_vl_mrope(hf):
    config = hf.tf.Qwen2VLConfig(hidden_size=3584, num_attention_heads=28,
                                 rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]})
    # transformers 4.49 rewrites the type: {"type": "default", "rope_type": "default", ...}
    assert config.rope_scaling["rope_type"] == "default"
    check_config(hf, config, "default")
    plan = from_hf(config)
    assert plan.hf.mrope_section == (16, 24, 24) and not plan.hf.mrope_interleaved
    assert (plan.hf.head_dim, plan.hf.base) == (128, 1000000.0)
    # the config.json form, before the rewrite
    raw = {"hidden_size": 3584, "num_attention_heads": 28, "rope_theta": 1000000.0,
           "max_position_embeddings": 32768,
           "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
    assert_same_plan(from_hf(raw), plan)
    # transformers 5.x: a composite config whose text_config holds rope_parameters
    composite = {"model_type": "qwen2_vl", "vision_config": {"depth": 32, "embed_dim": 1280},
                 "text_config": {"hidden_size": 3584, "num_attention_heads": 28,
                                 "max_position_embeddings": 32768,
                                 "rope_parameters": {"rope_type": "default",
                                                     "mrope_section": [16, 24, 24],
                                                     "rope_theta": 1000000.0}}}
    assert_same_plan(from_hf(composite), plan)
    # Qwen3-VL style interleaved sections
    interleaved = copy.deepcopy(composite)
    interleaved["text_config"]["rope_parameters"].update(mrope_section=[24, 20, 20],
                                                         mrope_interleaved=True)
    p = from_hf(interleaved)
    assert p.hf.mrope_section == (24, 20, 20) and p.hf.mrope_interleaved


def test_composite_config_object(hf):
    text = llama(hf, rope_theta=500000.0, rope_scaling={"rope_type": "linear", "factor": 2.0})
    config = hf.tf.LlavaConfig(text_config=text.to_dict())
    assert not hasattr(config, "rope_theta")
    assert_same_plan(from_hf(config), from_hf(text))
    assert_same_plan(from_hf(config.to_dict()), from_hf(text))


# --- the rules of HF's rotary modules (forward) ----------------------------------------------

def module_inv_freq(hf, module, seq_len, f64=False):
    """HF's rotary module's inv_freq and attention scaling after a forward whose largest
    position is seq_len - 1."""
    torch = hf.torch
    position_ids = torch.tensor([[0, seq_len - 1]])
    x = torch.zeros(1, dtype=torch.float32)
    module(x, position_ids)
    return module.inv_freq.numpy().copy(), module.attention_scaling


def test_dynamic_module_rule(hf):
    """LlamaRotaryEmbedding._dynamic_frequency_update (transformers 4.49): a fresh module
    recomputes for seq_len > max_position_embeddings and keeps the initial inv_freq
    otherwise; for_seq_len gives the same frequencies (HF's forward computes the new base
    from a tensor seq_len, in float32: checked against the float64 run of the same code)."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    config = llama(hf, max_position_embeddings=2048,
                   rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    plan = from_hf(config)
    for seq_len in (100, 2048, 2049, 3000, 50000):
        inv32, att = module_inv_freq(hf, LlamaRotaryEmbedding(config), seq_len)
        with float64_everywhere(hf.torch):
            inv64, att64 = module_inv_freq(hf, LlamaRotaryEmbedding(config), seq_len)
        assert inv64.dtype == np.float64 and att == att64 == 1.0
        assert_matches_hf(plan.hf.for_seq_len(seq_len), inv32, inv64, att)
    # growing, then shorter than max_position_embeddings (HF resets), then growing again:
    # one module, the same frequencies as for_seq_len at every step
    with float64_everywhere(hf.torch):
        module = LlamaRotaryEmbedding(config)
    for seq_len in (100, 2100, 4000, 100, 2050):
        with float64_everywhere(hf.torch):
            inv64, _ = module_inv_freq(hf, module, seq_len)
        np.testing.assert_allclose(_hfconfig.resolve_plan(plan, seq_len - 1).freqs, inv64,
                                   rtol=1e-14, atol=0)


def test_dynamic_module_keeps_grown_frequencies(hf):
    """The one place HF's dynamic module is stateful: after growing to 4000, a call of
    length 2100 (still above max_position_embeddings) keeps the 4000 frequencies, where
    for_seq_len (stateless) gives those of 2100 (what a fresh module computes)."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    config = llama(hf, max_position_embeddings=2048,
                   rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    plan = from_hf(config)
    with float64_everywhere(hf.torch):
        module = LlamaRotaryEmbedding(config)
        module_inv_freq(hf, module, 4000)
        kept, _ = module_inv_freq(hf, module, 2100)
    np.testing.assert_allclose(plan.hf.for_seq_len(4000).freqs, kept, rtol=1e-14, atol=0)
    assert not np.allclose(plan.hf.for_seq_len(2100).freqs, kept, rtol=1e-6, atol=0)


def test_longrope_module_rule(hf):
    """Phi3RotaryEmbedding._longrope_frequency_update (transformers 4.49): long factors when
    seq_len > config.original_max_position_embeddings, short ones otherwise; the attention
    scaling stays the one computed at init."""
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding
    config = phi3(hf)
    plan = from_hf(config)
    module = Phi3RotaryEmbedding(config)
    for seq_len in (10, 4096, 4097, 100000, 4096, 5000):
        inv32, att = module_inv_freq(hf, module, seq_len)
        with float64_everywhere(hf.torch):
            inv64, _ = module_inv_freq(hf, Phi3RotaryEmbedding(config), seq_len)
        used = _hfconfig.resolve_plan(plan, seq_len - 1)
        assert (used is plan) == (seq_len <= 4096)
        assert_matches_hf(used, inv32, inv64, att)


# --- transformers 4.x dicts and 5.x rope_parameters dicts give the same plan -----------------

def v4_configs(hf):
    short, long = phi3_factors(48, 7)
    return {
        "default": llama(hf, rope_theta=1e6),
        "linear": llama(hf, rope_scaling={"type": "linear", "factor": 4.0}),
        "dynamic": llama(hf, max_position_embeddings=2048,
                         rope_scaling={"rope_type": "dynamic", "factor": 2.0}),
        "yarn": llama(hf, max_position_embeddings=32768, rope_theta=1e6,
                      rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 16.0}),
        "longrope": phi3(hf),
        "longrope_no_original": llama(hf, hidden_size=3072, num_attention_heads=32,
                                      max_position_embeddings=8192,
                                      rope_scaling={"rope_type": "longrope", "factor": 2.0,
                                                    "short_factor": short,
                                                    "long_factor": long}),
        "llama3": llama(hf, rope_theta=500000.0, max_position_embeddings=131072,
                        rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 8192}),
        "partial": hf.tf.PhiConfig(hidden_size=320, num_attention_heads=4,
                                   partial_rotary_factor=0.4),
        "mrope": hf.tf.Qwen2VLConfig(hidden_size=3584, num_attention_heads=28,
                                     rope_scaling={"type": "mrope",
                                                   "mrope_section": [16, 24, 24]}),
    }


@pytest.mark.parametrize("name", ["default", "linear", "dynamic", "yarn", "longrope",
                                  "longrope_no_original", "llama3", "partial", "mrope"])
@pytest.mark.parametrize("reading", ["4", "5"])
def test_v4_and_v5_dicts_agree(hf, name, reading):
    # either reading, the keys in either layout
    config = v4_configs(hf)[name]
    want = from_hf(config, transformers=reading)
    d4 = config.to_dict()
    d5 = v5_dict(d4)
    assert "rope_scaling" not in d5 and "rope_theta" not in d5
    for seq_len in (None, 10 ** 6):
        expected = from_hf(config, seq_len, transformers=reading)
        for d in (d4, d5):
            assert_same_plan(from_hf(d, seq_len, transformers=reading), expected)
    # 5.x keeps "type" next to the "rope_type" it derives; and both dicts at once
    d5["rope_parameters"]["type"] = d5["rope_parameters"]["rope_type"]
    assert_same_plan(from_hf(d5, transformers=reading), want)
    both = dict(d4, rope_parameters=d5["rope_parameters"])
    assert_same_plan(from_hf(both, transformers=reading), want)


# --- transformers 5.x keys that 4.49 does not read (dicts; a float64 reference) --------------

def yarn_reference(dim, base, factor, original, max_pos, beta_fast=None, beta_slow=None,
                   truncate=True, mscale=None, mscale_all_dim=None, attention_factor=None):
    """transformers 5.x's _compute_yarn_parameters, in float64 numpy."""
    if factor is None:
        factor = max_pos / original

    def get_mscale(scale, m=1):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(get_mscale(factor, mscale)
                                     / get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = get_mscale(factor)
    beta_fast, beta_slow = beta_fast or 32, beta_slow or 1

    def correction_dim(rotations):
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    extrapolation = 1 - np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)
    pos = base ** (np.arange(0, dim, 2) / dim)
    freqs = (1 / (factor * pos)) * (1 - extrapolation) + (1 / pos) * extrapolation
    return freqs, attention_factor


@pytest.mark.parametrize("extra", [
    {},
    {"mscale": 1.0, "mscale_all_dim": 1.0},          # DeepSeek-V3
    {"mscale": 0.707, "mscale_all_dim": 1.0},
    {"mscale": 1.0},                                 # one of the two: the plain factor
    {"truncate": False},                             # gpt-oss
    {"truncate": True, "beta_fast": 16.0, "beta_slow": 2.0},
    {"attention_factor": 1.25, "mscale": 1.0, "mscale_all_dim": 0.5},
])
@pytest.mark.parametrize("factor,original,max_pos", [(40.0, 4096, 163840), (4.0, 32768, 40960),
                                                     (None, 4096, 131072)])
def test_yarn_v5_keys(extra, factor, original, max_pos):
    rp = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original,
          "rope_theta": 1e6, **extra}
    config = {"hidden_size": 1024, "num_attention_heads": 8, "max_position_embeddings": max_pos,
              "rope_parameters": rp}
    plan = from_hf(config, transformers="5")
    want, att = yarn_reference(128, 1e6, factor, original, max_pos,
                               extra.get("beta_fast"), extra.get("beta_slow"),
                               extra.get("truncate", True), extra.get("mscale"),
                               extra.get("mscale_all_dim"), extra.get("attention_factor"))
    np.testing.assert_allclose(plan.freqs, want, rtol=1e-14, atol=0)
    assert plan.attention_factor == att
    # the same keys in a 4.x rope_scaling dict
    v4 = {"hidden_size": 1024, "num_attention_heads": 8, "max_position_embeddings": max_pos,
          "rope_theta": 1e6, "rope_scaling": {k: v for k, v in rp.items() if k != "rope_theta"}}
    assert_same_plan(from_hf(v4, transformers="5"), plan)


def test_v5_original_max_position_embeddings_defaults():
    # llama3 / yarn / longrope without one: the config's max_position_embeddings (5.x)
    base = {"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 8192}
    explicit = dict(base, rope_parameters={"rope_type": "llama3", "factor": 8.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 8192})
    implicit = copy.deepcopy(explicit)
    del implicit["rope_parameters"]["original_max_position_embeddings"]
    assert_same_plan(from_hf(implicit, transformers="5"), from_hf(explicit, transformers="5"))
    # the config-level value (Phi-3) serves llama3 and yarn as well
    level = dict(copy.deepcopy(implicit), original_max_position_embeddings=2048)
    in_dict = copy.deepcopy(implicit)
    in_dict["rope_parameters"]["original_max_position_embeddings"] = 2048
    assert_same_plan(from_hf(level, transformers="5"), from_hf(in_dict, transformers="5"))


# --- errors: nothing ignored ---------------------------------------------------------------

BASE = {"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 4096,
        "rope_theta": 10000.0}
SHORT, LONG = [1.0] * 32, [2.0] * 32
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 1024}
LONGROPE = {"rope_type": "longrope", "short_factor": SHORT, "long_factor": LONG}


def config_with(scaling=None, **top):
    d = dict(BASE, **top)
    if scaling is not None:
        d["rope_scaling"] = scaling
    return {k: v for k, v in d.items() if v is not None}


@pytest.mark.parametrize("config,key", [
    # unknown keys, and keys the type does not read (HF's _check_received_keys sets)
    (config_with({"rope_type": "linear", "factor": 2.0, "foo": 1}), "foo"),
    (config_with({"rope_type": "default", "factor": 2.0}), "factor"),
    (config_with({"rope_type": "linear", "factor": 2.0, "beta_fast": 32.0}), "beta_fast"),
    (config_with({"rope_type": "linear", "factor": 2.0,
                  "original_max_position_embeddings": 1024}),
     "original_max_position_embeddings"),
    (config_with({"rope_type": "dynamic", "factor": 2.0, "attention_factor": 1.0}),
     "attention_factor"),
    (config_with({"rope_type": "yarn", "factor": 2.0, "short_factor": SHORT}), "short_factor"),
    (config_with({"rope_type": "yarn", "factor": 2.0, "low_freq_factor": 1.0}),
     "low_freq_factor"),
    (config_with(dict(LONGROPE, beta_fast=32.0)), "beta_fast"),
    (config_with(dict(LONGROPE, mscale=1.0)), "mscale"),
    (config_with(dict(LLAMA3, attention_factor=1.0)), "attention_factor"),
    (config_with(dict(LLAMA3, truncate=True)), "truncate"),
    (config_with({"rope_type": "default", "alpha": 2.0}), "alpha"),
    # required keys missing (or None)
    (config_with({"rope_type": "linear"}), "factor"),
    (config_with({"rope_type": "dynamic", "factor": None}), "factor"),
    (config_with({k: v for k, v in LLAMA3.items() if k != "low_freq_factor"}),
     "low_freq_factor"),
    (config_with({k: v for k, v in LONGROPE.items() if k != "long_factor"}), "long_factor"),
    (config_with({"type": "mrope"}), "mrope_section"),
    # contradictions
    (config_with({"type": "linear", "rope_type": "dynamic", "factor": 2.0}), "rope_type"),
    (config_with({"type": "su", "rope_type": "yarn", "factor": 2.0}), "rope_type"),
    (config_with({"rope_type": "linear", "factor": 2.0, "rope_theta": 500000.0}), "rope_theta"),
    (config_with({"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5},
                 partial_rotary_factor=1.0), "partial_rotary_factor"),
    (config_with(LLAMA3, original_max_position_embeddings=2048),
     "original_max_position_embeddings"),
    (config_with({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
                 original_max_position_embeddings=2048), "original_max_position_embeddings"),
    (config_with(dict(LONGROPE, original_max_position_embeddings=1024),
                 original_max_position_embeddings=2048), "original_max_position_embeddings"),
    (config_with({"rope_type": "dynamic", "factor": 2.0,
                  "original_max_position_embeddings": 2048}),
     "original_max_position_embeddings"),
    (dict(BASE, rope_scaling={"rope_type": "linear", "factor": 2.0},
          rope_parameters={"rope_type": "linear", "factor": 4.0}), "factor"),
    (dict(BASE, rope_scaling={"rope_type": "linear", "factor": 2.0},
          rope_parameters={"rope_type": "dynamic", "factor": 2.0}), "rope_type"),
    # bad values
    (config_with({"rope_type": "foo"}), "foo"),
    (config_with({"rope_type": "ntk_alpha", "alpha": 2.0}), "ntk_alpha"),
    (config_with({"rope_type": 3}), "rope_type"),
    (config_with({"rope_type": "linear", "factor": "2.0"}), "factor"),
    (config_with({"rope_type": "linear", "factor": True}), "factor"),
    (config_with({"rope_type": "linear", "factor": float("nan")}), "factor"),
    (config_with({"rope_type": "yarn", "factor": 2.0, "truncate": "no"}), "truncate"),
    (config_with({"rope_type": "yarn", "factor": 2.0, "attention_factor": 0.0}),
     "attention_factor"),
    (config_with(dict(LONGROPE, attention_factor=-1.0)), "attention_factor"),
    (config_with(dict(LONGROPE, short_factor="1.0")), "short_factor"),
    (config_with(dict(LONGROPE, long_factor=[2.0] * 31 + ["x"])), "long_factor"),
    (config_with(dict(LLAMA3, original_max_position_embeddings=1024.5)),
     "original_max_position_embeddings"),
    (config_with(max_position_embeddings=0), "max_position_embeddings"),
    (config_with(rope_theta="10000"), "rope_theta"),
    (config_with({"rope_type": "default", "mrope_section": [16, 8, 16]}), "mrope_section"),
    (config_with({"rope_type": "default", "mrope_section": [16, 16]}), "mrope_section"),
    (config_with({"rope_type": "default", "mrope_section": [16, 8, 8.5]}), "mrope_section"),
    (config_with({"rope_type": "default", "mrope_section": [16, -8, 24]}), "mrope_section"),
    (config_with({"rope_type": "default", "mrope_interleaved": True}), "mrope_interleaved"),
    (config_with({"rope_type": "default", "mrope_section": [16, 8, 8],
                  "mrope_interleaved": 1}), "mrope_interleaved"),
    (config_with(partial_rotary_factor=1.5), "partial_rotary_factor"),
    (config_with(partial_rotary_factor=0.0), "partial_rotary_factor"),
    (config_with(head_dim=10, partial_rotary_factor=0.5), "rotary_dim"),   # 5: odd
    (config_with(head_dim=64, partial_rotary_factor=0.01), "rotary_dim"),  # 0
    (config_with(head_dim=7), "rotary_dim"),
    (config_with(head_dim=0), "head_dim"),
    ({"rope_theta": 10000.0}, "head_dim"),
    (config_with({"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=None),
     "max_position_embeddings"),
    (config_with({"rope_type": "yarn", "factor": 2.0}, max_position_embeddings=None),
     "max_position_embeddings"),
    (config_with(LONGROPE, max_position_embeddings=None), "max_position_embeddings"),
    (dict(BASE, rope_parameters={"full_attention": {"rope_type": "default"},
                                 "sliding_attention": {"rope_type": "default"}}),
     "layer type"),
    (dict(BASE, rope_scaling=[("rope_type", "linear")]), "rope_scaling"),
])
def test_config_errors(config, key):
    # the message names the key (as a whole word: "factor" is not "partial_rotary_factor");
    # transformers 5.x's reading, the one that reads every key listed (4.x reads fewer of the
    # length keys: test_readings_* below)
    with pytest.raises(ValueError, match=rf"(?<!\w){re.escape(key)}(?!\w)"):
        from_hf(config, transformers="5")


@pytest.mark.parametrize("config", [
    config_with({"rope_type": "linear", "factor": 0.0}),
    config_with({"rope_type": "linear", "factor": -2.0}),
    config_with({"rope_type": "yarn", "factor": 4.0, "beta_fast": 1.0, "beta_slow": 32.0}),
    config_with(dict(LLAMA3, low_freq_factor=4.0, high_freq_factor=1.0)),
    config_with(dict(LONGROPE, short_factor=[1.0] * 31)),
    config_with(dict(LONGROPE, long_factor=[2.0] * 31 + [0.0])),
    config_with(rope_theta=1.0),
    config_with(rope_theta=-10000.0),
    config_with({"rope_type": "dynamic", "factor": 2.0}, head_dim=2),
])
def test_values_the_library_refuses(config):
    with pytest.raises(posenc.PosencError):
        from_hf(config, transformers="5")


def test_config_type_errors():
    for config in (None, 5, "config.json", b"{}"):
        with pytest.raises(TypeError):
            from_hf(config)
    plan = from_hf(config_with({"rope_type": "dynamic", "factor": 2.0}))
    for bad in (1.5, "10", True):
        with pytest.raises(TypeError):
            plan.hf.for_seq_len(bad)
        with pytest.raises(TypeError):
            from_hf(config_with({"rope_type": "dynamic", "factor": 2.0}), bad)


@pytest.mark.parametrize("config", [
    # HF's legacy copies and equal values in two places are fine
    config_with({"type": "linear", "rope_type": "linear", "factor": 2.0}),
    config_with({"type": "su", "rope_type": "longrope", "short_factor": SHORT,
                 "long_factor": LONG}),
    config_with({"type": "mrope", "rope_type": "default", "mrope_section": [8, 12, 12]}),
    config_with({"type": "default", "rope_type": "default", "mrope_section": [8, 12, 12]}),
    config_with({"rope_type": "linear", "factor": 2.0, "rope_theta": 10000}),
    config_with({"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5},
                partial_rotary_factor=0.5),
    config_with(dict(LLAMA3, original_max_position_embeddings=2048),
                original_max_position_embeddings=2048),
    config_with(dict(LONGROPE, factor=4.0), original_max_position_embeddings=1024),
    config_with(dict(LONGROPE, factor=2.0), original_max_position_embeddings=1024),
    config_with({"rope_type": "dynamic", "factor": 2.0,
                 "original_max_position_embeddings": 4096}),
    config_with({"rope_type": "yarn", "factor": 2.0, "attention_factor": None,
                 "beta_fast": None, "beta_slow": None, "mscale": None}),
    config_with({"rope_type": "yarn", "factor": 0.5, "attention_factor": 1.0}),
    config_with({"rope_type": "yarn", "factor": 0.5}),
    config_with(head_dim=None),
    # Phi3Config always has original_max_position_embeddings; other types do not read it
    config_with(original_max_position_embeddings=2048),
    config_with({"rope_type": "linear", "factor": 2.0}, original_max_position_embeddings=2048),
    dict(BASE, rope_scaling=None, rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                   "rope_theta": 10000.0}),
])
def test_accepted(config):
    plan = from_hf(config, transformers="5")
    assert plan.rotary_dim == plan.hf.rotary_dim


def test_yarn_factor_none_is_the_length_ratio():
    # transformers 5.x: factor None -> max_position_embeddings / original
    config = config_with({"rope_type": "yarn", "factor": None,
                          "original_max_position_embeddings": 1024})
    explicit = config_with({"rope_type": "yarn", "factor": 4.0,
                            "original_max_position_embeddings": 1024})
    assert_same_plan(from_hf(config, transformers="5"), from_hf(explicit, transformers="5"))
    # transformers 4.x refuses it (math.log(None) in 4.49)
    with pytest.raises(ValueError, match=r"factor None.*transformers='5'"):
        from_hf(config, transformers="4")


# --- resolve_plan, for_seq_len and the cache -------------------------------------------------

DYNAMIC = config_with({"rope_type": "dynamic", "factor": 2.0})
PHI3_LIKE = config_with(LONGROPE, max_position_embeddings=32768,
                        original_max_position_embeddings=4096, model_type="phi3")


def test_resolve_plan_not_sequence_dependent():
    for config in (BASE, config_with({"rope_type": "linear", "factor": 2.0}),
                   config_with(LLAMA3),
                   config_with(dict(LONGROPE, long_factor=SHORT, factor=2.0))):  # long == short
        plan = from_hf(config)
        assert not plan.hf.seq_dependent and plan.hf.seq_len_threshold is None
        for top in (0, 4095, 4096, 10 ** 7):
            assert _hfconfig.resolve_plan(plan, top) is plan
    plain = posenc.RopePlan(64)
    assert _hfconfig.resolve_plan(plain, 10 ** 6) is plain


def test_resolve_plan_dynamic():
    plan = from_hf(DYNAMIC)
    default = posenc.RopePlan.scaled(64, 10000.0)
    np.testing.assert_array_equal(plan.freqs, default.freqs)
    for top in (-1, 0, 100, 4095):  # seq_len <= max_position_embeddings: the initial plan
        assert _hfconfig.resolve_plan(plan, top) is plan
    for top in (4096, 5000, 10 ** 6):
        used = _hfconfig.resolve_plan(plan, top)
        assert used is not plan and used.hf.seq_len == top + 1 and not used.hf.pinned
        want = posenc.RopePlan.scaled(64, 10000.0, {"rope_type": "dynamic", "factor": 2.0},
                                      max_position_embeddings=4096, seq_len=top + 1)
        np.testing.assert_array_equal(used.freqs, want.freqs)
        assert np.all(used.freqs[1:] < default.freqs[1:])
        assert _hfconfig.resolve_plan(plan, top) is used          # cached
        assert _hfconfig.resolve_plan(used, top) is used          # from any plan of the config
        assert _hfconfig.resolve_plan(used, 10) is plan


def test_dynamic_cache_is_bounded():
    plan = from_hf(DYNAMIC)
    first = plan.hf.for_seq_len(5000)
    plans = [plan.hf.for_seq_len(5000 + i) for i in range(1, 20)]
    assert len(plan.hf._maker._dynamic) == _hfconfig._DYNAMIC_CACHE_SIZE
    assert plan.hf.for_seq_len(5000 + 19) is plans[-1]
    again = plan.hf.for_seq_len(5000)  # evicted: a new plan, the same frequencies
    assert again is not first
    np.testing.assert_array_equal(again.freqs, first.freqs)
    # a closed cached plan is replaced, not handed out
    again.close()
    fresh = plan.hf.for_seq_len(5000)
    assert fresh is not again and fresh.rotary_dim == 64


def test_resolve_plan_longrope():
    plan = from_hf(PHI3_LIKE)
    assert plan.hf.seq_dependent and plan.hf.seq_len_threshold == 4096
    base = posenc.RopePlan.scaled(64, 10000.0).freqs
    np.testing.assert_allclose(plan.freqs, base / np.array(SHORT), rtol=1e-15)
    for top in (0, 4095):
        assert _hfconfig.resolve_plan(plan, top) is plan
    long = _hfconfig.resolve_plan(plan, 4096)
    np.testing.assert_allclose(long.freqs, base / np.array(LONG), rtol=1e-15)
    assert long.attention_factor == plan.attention_factor
    assert long.hf.seq_len == 4097 and long.hf.for_seq_len(None) is plan
    for top in (4097, 10 ** 6):
        assert _hfconfig.resolve_plan(plan, top) is long


def test_pinned_seq_len():
    # seq_len given to from_hf_config fixes the plan's frequencies for every call
    plan = from_hf(DYNAMIC, seq_len=6000)
    assert plan.hf.pinned and plan.hf.seq_len == 6000 and plan.hf.seq_dependent
    np.testing.assert_array_equal(plan.freqs, from_hf(DYNAMIC).hf.for_seq_len(6000).freqs)
    for top in (0, 100, 10 ** 6):
        assert _hfconfig.resolve_plan(plan, top) is plan
    # its for_seq_len still follows HF
    assert not plan.hf.for_seq_len(10).hf.pinned
    np.testing.assert_array_equal(plan.hf.for_seq_len(10).freqs,
                                  posenc.RopePlan.scaled(64, 10000.0).freqs)
    short = from_hf(PHI3_LIKE, seq_len=100)
    assert short.hf.pinned and _hfconfig.resolve_plan(short, 10 ** 6) is short
    np.testing.assert_array_equal(short.freqs, from_hf(PHI3_LIKE).freqs)
    long = from_hf(PHI3_LIKE, seq_len=5000)
    np.testing.assert_array_equal(long.freqs, from_hf(PHI3_LIKE).hf.for_seq_len(4097).freqs)


def test_kernels_resolve_per_call():
    """posenc.rope with a dynamic plan rotates as with the plan for its largest position."""
    plan = from_hf(config_with({"rope_type": "dynamic", "factor": 4.0}))
    rng = np.random.default_rng(0)
    q = rng.standard_normal((3, 2, 64)).astype(np.float32)
    for positions in ([0, 7, 4095], [0, 7, 9000]):
        got, want = q.copy(), q.copy()
        posenc.rope(plan, got, positions=positions)
        posenc.rope(_hfconfig.resolve_plan(plan, max(positions)), want, positions=positions)
        np.testing.assert_array_equal(got, want)
    fixed = posenc.RopePlan.scaled(64, 10000.0)
    got, want = q.copy(), q.copy()
    posenc.rope(plan, got, positions=[0, 7, 9000])
    posenc.rope(fixed, want, positions=[0, 7, 9000])
    assert not np.array_equal(got, want)


def test_threads_share_the_cache():
    plan = from_hf(DYNAMIC)
    lengths = [4097 + (i % 5) for i in range(40)] + [100] * 10
    results = [None] * len(lengths)

    def work(i):
        results[i] = plan.hf.for_seq_len(lengths[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(lengths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seq_len, used in zip(lengths, results):
        assert used is plan.hf.for_seq_len(seq_len)
        assert used.hf.seq_len == (seq_len if seq_len > 4096 else None)


def test_hf_record():
    plan = from_hf(config_with({"rope_type": "linear", "factor": 2.0}, head_dim=96,
                               partial_rotary_factor=0.5, rope_theta=500000))
    hf = plan.hf
    assert isinstance(hf, _hfconfig.HfRope)
    assert (hf.rope_type, hf.head_dim, hf.rotary_dim, hf.base) == ("linear", 96, 48, 500000.0)
    assert hf.mrope_section is None and hf.mrope_interleaved is False
    assert hf.seq_dependent is False and hf.seq_len is None and hf.pinned is False
    with pytest.raises(Exception):
        hf.rope_type = "default"  # frozen
    assert hf == from_hf(config_with({"rope_type": "linear", "factor": 2.0}, head_dim=96,
                                     partial_rotary_factor=0.5, rope_theta=500000.0)).hf


def test_phi3_small_config_dict():
    """Phi-3-small's config.json (its own modeling code, not transformers'): the base as
    rope_embedding_base, "su" factors and the attention factor of each set as short_mscale
    and long_mscale (read as that code, vLLM and MLX read them)."""
    short, long = phi3_factors(64, 9)  # head_dim 128: 64 pairs
    config = {"model_type": "phi3small", "hidden_size": 4096, "num_attention_heads": 32,
              "max_position_embeddings": 131072, "rope_embedding_base": 1000000,
              "rope_position_scale": 1.0,
              "rope_scaling": {"type": "su", "short_factor": short, "long_factor": long,
                               "short_mscale": 1.0, "long_mscale": 1.1902380714238083,
                               "original_max_position_embeddings": 8192}}
    plan = from_hf(config)
    assert plan.hf.rope_type == "longrope" and plan.hf.base == 1e6
    assert plan.hf.seq_dependent and plan.hf.seq_len_threshold == 8192
    long_plan = plan.hf.for_seq_len(8193)
    assert plan.attention_factor == 1.0 and long_plan.attention_factor == 1.1902380714238083
    assert _hfconfig.resolve_plan(plan, 8192) is long_plan
    w = 1e6 ** (-np.arange(64) * 2 / 128)
    np.testing.assert_allclose(plan.freqs, w / np.array(short), rtol=1e-14)
    np.testing.assert_allclose(long_plan.freqs, w / np.array(long), rtol=1e-14)
    # without the mscales: the same frequencies, the type's own attention factor for both
    plain = copy.deepcopy(config)
    del plain["rope_scaling"]["short_mscale"], plain["rope_scaling"]["long_mscale"]
    default = math.sqrt(1 + math.log(131072 / 8192) / math.log(8192))
    assert from_hf(plain).attention_factor == default
    np.testing.assert_array_equal(from_hf(plain).freqs, plan.freqs)
    # equal mscales and equal factors: nothing depends on the length
    same = copy.deepcopy(config)
    same["rope_scaling"].update(long_factor=short, long_mscale=1.0)
    assert not from_hf(same).hf.seq_dependent
    # refused
    both = copy.deepcopy(config)
    both["rope_scaling"]["attention_factor"] = 1.1
    with pytest.raises(ValueError, match="attention factor twice"):
        from_hf(both)
    with pytest.raises(ValueError, match="rope_embedding_base"):
        from_hf(dict(config, rope_theta=10000.0))
    with pytest.raises(ValueError, match="rope_position_scale"):
        from_hf(dict(config, rope_position_scale=2.0))
    bad = copy.deepcopy(config)
    bad["rope_scaling"]["long_mscale"] = -1.0
    with pytest.raises(ValueError, match="long_mscale"):
        from_hf(bad)



# --- transformers 4.x and 5.x readings (issue 26, case 1) -----------------------------------

def readings_warning(config, **kw):
    """from_hf_config with the installed transformers' reading, returning (plan, the
    HfReadingWarning messages)."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = from_hf(config, **kw)
    return plan, [str(w.message) for w in caught
                  if issubclass(w.category, posenc.HfReadingWarning)]


def qwen_yarn(hf):
    """Qwen2.5 / Qwen3 with YaRN as their model cards say: max_position_embeddings 131072,
    rope_scaling {yarn, factor 4, original_max_position_embeddings 32768}."""
    return hf.tf.Qwen2Config(hidden_size=1024, num_attention_heads=8, rope_theta=1000000.0,
                             max_position_embeddings=131072,
                             rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                           "original_max_position_embeddings": 32768})


def test_readings_follow_the_installed_transformers(hf):
    assert hf.tf.__version__.startswith("4.49"), "these tests check transformers 4.49's reading"
    assert _hfconfig.installed_transformers() == hf.tf.__version__
    config = qwen_yarn(hf)
    plan, messages = readings_warning(config)
    # 4.49 computes the correction range from max_position_embeddings: HF's own numbers
    inv32, inv64, att = hf_inv_freq(hf, config, "yarn")
    assert_matches_hf(plan, inv32, inv64, att)
    assert plan.hf.transformers == "4"
    plan32, _ = readings_warning(config, f32=True)  # HF's float32 inv_freq, bit for bit
    np.testing.assert_array_equal(plan32.freqs, inv32.astype(np.float64))
    assert len(messages) == 1 and "original_max_position_embeddings" in messages[0]
    assert "131072" in messages[0] and "32768" in messages[0] and "transformers='5'" in messages[0]
    # 5.x's reading, named: no warning; its formula from original_max_position_embeddings
    five, messages = readings_warning(config, transformers="5")
    assert messages == [] and five.hf.transformers == "5"
    want, att5 = yarn_reference(128, 1e6, 4.0, 32768, 131072)
    np.testing.assert_allclose(five.freqs, want, rtol=1e-14, atol=0)
    assert att5 == att
    # the two readings are far apart (the issue measured up to 55%)
    assert np.max(np.abs(five.freqs / plan.freqs - 1)) > 0.5
    # named 4.x (or a 4.x version): the installed reading without a warning
    for name in ("4", "4.49.0", 4):
        again, messages = readings_warning(config, transformers=name)
        assert messages == []
        assert_same_plan(again, plan)


def test_readings_deepseek_yarn_mscale(hf):
    """DeepSeek-V2's yarn keys: 4.49 reads neither mscale nor mscale_all_dim (attention
    factor 0.1 ln 40 + 1 = 1.369); 5.x takes their ratio (1.0 when they are equal)."""
    scaling = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
               "beta_fast": 32, "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707}
    config = llama(hf, hidden_size=1024, num_attention_heads=16, head_dim=64,
                   max_position_embeddings=163840, rope_scaling=dict(scaling))
    plan, messages = readings_warning(config)
    inv32, inv64, att = hf_inv_freq(hf, config, "yarn")
    assert_matches_hf(plan, inv32, inv64, att)
    assert plan.attention_factor == att == 0.1 * math.log(40) + 1
    plan32, _ = readings_warning(config, f32=True)
    np.testing.assert_array_equal(plan32.freqs, inv32.astype(np.float64))
    assert plan32.attention_factor == att
    assert len(messages) == 1 and "mscale, mscale_all_dim" in messages[0]
    assert "original_max_position_embeddings" in messages[0]
    five = from_hf(config, transformers="5")
    want, att5 = yarn_reference(64, 10000.0, 40.0, 4096, 163840, 32, 1, True, 0.707, 0.707)
    assert five.attention_factor == att5 == 1.0
    np.testing.assert_allclose(five.freqs, want, rtol=1e-14, atol=0)


def test_readings_llama_longrope_switch(hf):
    """A Llama with LongRoPE: 4.49's LlamaRotaryEmbedding keeps the short factors at every
    length; 5.x switches to the long ones past the pretraining length."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    short, long = phi3_factors(32, 5)
    config = llama(hf, max_position_embeddings=8192,
                   rope_scaling={"rope_type": "longrope", "short_factor": short,
                                 "long_factor": long, "factor": 4.0})
    plan, messages = readings_warning(config)
    assert not plan.hf.seq_dependent
    assert len(messages) == 1 and "long_factor" in messages[0]
    assert "the short factors at every length" in messages[0]
    module = LlamaRotaryEmbedding(config)
    inv, att = module_inv_freq(hf, module, 20000)
    np.testing.assert_allclose(_hfconfig.resolve_plan(plan, 19999).freqs, inv, rtol=1e-6)
    assert _hfconfig.resolve_plan(plan, 19999).attention_factor == att
    five = from_hf(config, transformers="5")
    assert five.hf.seq_dependent and five.hf.seq_len_threshold == 8192
    assert not np.allclose(_hfconfig.resolve_plan(five, 19999).freqs, inv, rtol=1e-3)


def test_readings_llama3_and_phi3_config_level_values(hf):
    # llama3: 4.x reads original_max_position_embeddings from rope_scaling only
    config = llama(hf, rope_theta=500000.0, max_position_embeddings=131072,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 8192})
    config.original_max_position_embeddings = 4096  # a config-level value, as Phi-3's
    plan, messages = readings_warning(config)
    assert_matches_hf(plan, *hf_inv_freq(hf, config, "llama3"))
    assert len(messages) == 1 and "original_max_position_embeddings" in messages[0]
    with pytest.raises(ValueError, match="original_max_position_embeddings"):
        from_hf(config, transformers="5")  # two values: 5.x's reading refuses
    bare = config_with({k: v for k, v in LLAMA3.items()
                        if k != "original_max_position_embeddings"})
    with pytest.raises(ValueError, match=r"original_max_position_embeddings.*transformers='5'"):
        from_hf(bare, transformers="4")
    # Phi-3 with a dict factor that is not max_position_embeddings / original: 4.x uses the
    # ratio (sqrt(1 + ln 32 / ln 4096)), 5.x the dict's factor
    config = phi3(hf)
    config.rope_scaling = dict(config.rope_scaling, factor=8.0)
    plan, messages = readings_warning(config)
    assert_matches_hf(plan, *hf_inv_freq(hf, config, "longrope"))
    assert plan.attention_factor == math.sqrt(1 + math.log(32) / math.log(4096))
    assert len(messages) == 1 and "factor" in messages[0]
    assert from_hf(config, transformers="5").attention_factor == \
        math.sqrt(1 + math.log(8) / math.log(4096))


@pytest.mark.parametrize("name", ["default", "linear", "dynamic", "yarn", "longrope", "llama3",
                                  "partial", "mrope"])
def test_readings_agree_without_a_warning(hf, name):
    """Where both readings give the same plan, nothing is said (the yarn config here has no
    original_max_position_embeddings; Phi-3's factor is the length ratio)."""
    import warnings
    config = v4_configs(hf)[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", posenc.HfReadingWarning)
        plan = from_hf(config)
        five = from_hf(config, transformers="5")
        np.testing.assert_array_equal(five.freqs, plan.freqs)
        assert five.attention_factor == plan.attention_factor
        assert (five.hf.seq_dependent, five.hf.seq_len_threshold) == \
            (plan.hf.seq_dependent, plan.hf.seq_len_threshold)
        assert_same_plan(from_hf(config.to_dict()), plan)


def test_reading_argument_errors():
    with pytest.raises(ValueError, match="transformers"):
        from_hf(BASE, transformers="3.0")
    with pytest.raises(ValueError, match="transformers"):
        from_hf(BASE, transformers="latest")
    with pytest.raises(TypeError, match="transformers"):
        from_hf(BASE, transformers=["5"])
