"""RopePlan.from_hf_config on the families' own keys (issue 26, case 6): the keys that decide
the rotary size, the base or the pair layout are read (GPT-NeoX's rotary_pct and
rotary_emb_base, GPT-J's rotary_dim, DeepSeek's qk_rope_head_dim, Gemma 3's
rope_local_base_freq, the config classes' own defaults) or refused (ChatGLM's rope_ratio,
configs of models without RoPE). Raw config.json dicts used to be read as if only the
generic keys existed: a GPT-NeoX dict rotated all of each head at base 10000, a DeepSeek
dict the whole hidden_size / heads.

Where transformers 4.49 has the family, the expected values are transformers' own (its config
class and ROPE_INIT_FUNCTIONS, or its modeling file's apply_rotary_pos_emb); the dict-only
families (DeepSeek, Gemma 3: not in 4.49) are checked against their formulas here.
"""

import copy
import logging
import warnings

import numpy as np
import pytest

import posenc


def from_hf(config, **kw):
    kw.setdefault("transformers", "4")
    return posenc.RopePlan.from_hf_config(config, **kw)


def default_freqs(rotary_dim, base):
    return base ** (-np.arange(0, rotary_dim, 2) / rotary_dim)


@pytest.fixture(scope="module")
def tf():
    try:
        import torch  # noqa: F401
        import transformers
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: F401
    except ImportError as e:
        pytest.skip(f"torch / transformers cannot be imported: {e}")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    return transformers


def hf_default_inv_freq(config):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    inv, att = ROPE_INIT_FUNCTIONS["default"](config, "cpu")
    return inv.numpy().astype(np.float64), att


# --- GPT-NeoX: rotary_pct, rotary_emb_base --------------------------------------------------

PYTHIA = {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8,
          "max_position_embeddings": 2048, "rotary_pct": 0.25, "rotary_emb_base": 10000}


def test_gpt_neox_dict_reads_rotary_pct_and_rotary_emb_base(tf):
    for extra in ({}, {"rotary_emb_base": 20000}, {"rotary_pct": 0.5}):
        d = dict(PYTHIA, **extra)
        plan = from_hf(d)
        config = tf.GPTNeoXConfig(**{k: v for k, v in d.items() if k != "model_type"})
        inv, att = hf_default_inv_freq(config)
        assert plan.rotary_dim == int(64 * d["rotary_pct"]) == 2 * inv.shape[0]
        assert plan.hf.base == d["rotary_emb_base"]
        np.testing.assert_allclose(plan.freqs, inv, rtol=1e-6)  # HF's float32 inv_freq
        assert plan.attention_factor == att
        assert plan.hf.layout == "neox"
    # left out of the dict: GPTNeoXConfig's defaults (rotary_pct 0.25), not 1
    bare = {k: v for k, v in PYTHIA.items() if k not in ("rotary_pct", "rotary_emb_base")}
    assert from_hf(bare).rotary_dim == 16 == int(64 * tf.GPTNeoXConfig().rotary_pct)
    # given twice, differently
    with pytest.raises(ValueError, match="rotary_emb_base"):
        from_hf(dict(PYTHIA, rope_theta=500000.0))
    with pytest.raises(ValueError, match="rotary_pct"):
        from_hf(dict(PYTHIA, partial_rotary_factor=1.0))
    # the config object (which copies them to partial_rotary_factor and rope_theta)
    obj = tf.GPTNeoXConfig(**{k: v for k, v in PYTHIA.items() if k != "model_type"})
    np.testing.assert_array_equal(from_hf(obj).freqs, from_hf(PYTHIA).freqs)


# --- GPT-J, CodeGen: rotary_dim, interleaved pairs ------------------------------------------

def test_gptj_rotary_dim_and_interleaved_layout(tf):
    d = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64,
         "n_positions": 2048}
    plan = from_hf(d)
    assert (plan.hf.head_dim, plan.rotary_dim, plan.hf.layout) == (256, 64, "gptj")
    np.testing.assert_allclose(plan.freqs, default_freqs(64, 10000.0), rtol=1e-15)
    # HF's GPT-J attention rotates q[..., :rotary_dim] by interleaved pairs: the kernels'
    # default for this plan is "gptj"
    from transformers.models.gptj import modeling_gptj
    import torch
    pos = torch.arange(5)[None]
    sincos = modeling_gptj.create_sinusoidal_positions(2048, 64)[pos]
    sin, cos = torch.split(sincos, 32, dim=-1)
    x = torch.randn(1, 5, 2, 256, generator=torch.Generator().manual_seed(0))
    want = torch.cat([modeling_gptj.apply_rotary_pos_emb(x[..., :64], sin, cos), x[..., 64:]],
                     -1)
    got = x[0].numpy().copy()
    posenc.rope(plan, got, start_pos=0)
    np.testing.assert_allclose(got, want[0].numpy(), rtol=0, atol=2e-6)
    # absent rotary_dim: GPTJConfig's default 64; null: the whole head (HF's None)
    assert from_hf({k: v for k, v in d.items() if k != "rotary_dim"}).rotary_dim == \
        tf.GPTJConfig().rotary_dim
    assert from_hf(dict(d, rotary_dim=None)).rotary_dim == 256
    with pytest.raises(ValueError, match="rotary_dim"):
        from_hf(dict(d, partial_rotary_factor=0.5))  # 128 != 64
    assert from_hf(dict(d, model_type="codegen")).hf.layout == "gptj"


@pytest.mark.parametrize("family", ["cohere", "glm"])
def test_interleaved_families_rotate_as_their_modeling_file(tf, family):
    """Cohere and GLM (transformers 4.49) rotate interleaved pairs; posenc.rope with the
    plan of their config and no layout= rotates as their apply_rotary_pos_emb."""
    import importlib
    import torch
    common = dict(hidden_size=256, num_attention_heads=4, num_key_value_heads=4,
                  max_position_embeddings=4096, rope_theta=10000.0)
    if family == "cohere":
        config = tf.CohereConfig(**common)
    else:
        config = tf.GlmConfig(**common, head_dim=64, partial_rotary_factor=0.5)
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    rotary = getattr(module, f"{'Cohere' if family == 'cohere' else 'Glm'}RotaryEmbedding")(
        config=config)
    pos = torch.tensor([[0, 1, 7, 30, 60]])  # small: HF's float32 angles are near exact
    gen = torch.Generator().manual_seed(1)
    q = torch.randn(1, 4, 5, 64, generator=gen)  # [B, H, L, D]
    cos, sin = rotary(q, pos)
    want, _ = module.apply_rotary_pos_emb(q, q, cos, sin)
    plan = from_hf(config.to_dict())
    assert plan.hf.layout == "gptj"
    got = posenc.rope_out(plan, q.numpy(), positions=pos.numpy(), axes="BHLD")
    np.testing.assert_allclose(got, want.numpy(), rtol=0, atol=1e-5)
    wrong = posenc.rope_out(plan, q.numpy(), positions=pos.numpy(), axes="BHLD",
                            layout="neox")
    assert np.abs(wrong - want.numpy()).max() > 0.1


# --- DeepSeek: qk_rope_head_dim, rope_interleave ----------------------------------------------

DEEPSEEK_V2 = {"model_type": "deepseek_v2", "hidden_size": 5120, "num_attention_heads": 128,
               "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
               "max_position_embeddings": 163840, "rope_theta": 10000,
               "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings":
                                4096, "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
                                "mscale_all_dim": 0.707}}


def test_deepseek_qk_rope_head_dim():
    plain = dict(DEEPSEEK_V2, rope_scaling=None)
    plan = from_hf(plain)
    # the rotated part of each head is q_pe / k_pe: 64 elements, not 5120 / 128 = 40
    assert (plan.hf.head_dim, plan.rotary_dim, plan.hf.layout) == (64, 64, "gptj")
    np.testing.assert_allclose(plan.freqs, default_freqs(64, 10000.0), rtol=1e-15)
    assert from_hf(dict(plain, rope_interleave=False)).hf.layout == "neox"
    assert from_hf(dict(plain, head_dim=64)).rotary_dim == 64  # 5.x's DeepseekV3Config
    with pytest.raises(ValueError, match="qk_rope_head_dim"):
        from_hf(dict(plain, head_dim=192))
    with pytest.raises(ValueError, match="qk_rope_head_dim"):
        from_hf(dict(plain, partial_rotary_factor=0.5))
    # with its yarn dict: the yarn frequencies of 64 dims (both readings; the attention
    # factor is where they differ: test_hf_config's readings tests)
    for reading in ("4", "5"):
        assert from_hf(DEEPSEEK_V2, transformers=reading).rotary_dim == 64


# --- Gemma 3: rope_local_base_freq, per layer type ------------------------------------------

GEMMA3 = {"model_type": "gemma3_text", "hidden_size": 2560, "num_attention_heads": 8,
          "head_dim": 256, "max_position_embeddings": 131072, "rope_theta": 1000000.0,
          "rope_local_base_freq": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0}}


def test_gemma3_layer_types():
    with pytest.raises(ValueError, match=r"rope_local_base_freq.*layer_type"):
        from_hf(GEMMA3)
    local = from_hf(GEMMA3, layer_type="sliding_attention")
    assert local.hf.base == 10000.0 and local.hf.rope_type == "default"
    np.testing.assert_allclose(local.freqs, default_freqs(256, 10000.0), rtol=1e-15)
    glob = from_hf(GEMMA3, layer_type="full_attention")
    assert glob.hf.base == 1e6 and glob.hf.rope_type == "linear"
    np.testing.assert_allclose(glob.freqs, default_freqs(256, 1e6) / 8, rtol=1e-15)
    assert glob.hf.layer_type == "full_attention"
    with pytest.raises(ValueError, match="layer_type"):
        from_hf(GEMMA3, layer_type="global")
    # transformers 5.x: rope_parameters per layer type
    v5 = {k: v for k, v in GEMMA3.items() if k not in ("rope_theta", "rope_local_base_freq",
                                                        "rope_scaling")}
    v5["rope_parameters"] = {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    with pytest.raises(ValueError, match="layer_type"):
        from_hf(v5)
    for layer_type, want in (("sliding_attention", local), ("full_attention", glob)):
        got = from_hf(v5, layer_type=layer_type)
        np.testing.assert_array_equal(got.freqs, want.freqs)


# --- refused ----------------------------------------------------------------------------------

BASE = {"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 4096}


@pytest.mark.parametrize("config,key", [
    (dict(BASE, model_type="chatglm", rope_ratio=50), "rope_ratio"),
    (dict(BASE, rotary_emb_fraction=0.5), "rotary_emb_fraction"),
    (dict(BASE, rotary_emb_dim=32), "rotary_emb_dim"),
    (dict(BASE, model_type="falcon", alibi=True), "alibi"),
    (dict(BASE, model_type="mpt", attn_config={"alibi": True}), "alibi"),
    (dict(BASE, model_type="bloom"), "bloom"),
    (dict(BASE, model_type="gpt2"), "gpt2"),
    (dict(BASE, position_embedding_type="absolute"), "position_embedding_type"),
    (dict(BASE, use_rope=False), "use_rope"),
])
def test_non_rope_and_unread_keys_refused(config, key):
    with pytest.raises(ValueError, match=key):
        from_hf(config)


def test_falcon_without_alibi_is_read(tf):
    d = dict(BASE, model_type="falcon", alibi=False, rope_theta=10000.0)
    assert from_hf(d).rotary_dim == 64


# --- the families' defaults are the installed transformers' --------------------------------

GENERIC = {"rope_theta": 10000.0, "partial_rotary_factor": 1.0}
ROTARY_KEYS = ("rope_theta", "partial_rotary_factor", "rotary_pct", "rotary_emb_base",
               "rotary_dim")


def class_defaults(config):
    """The rotary keys whose defaults differ from the generic ones, and a head_dim that does
    not follow hidden_size // num_attention_heads."""
    found = {}
    for key in ROTARY_KEYS:
        value = getattr(config, key, None)
        if value is not None and value != GENERIC.get(key):
            found[key] = value
    return found


def test_family_defaults_are_the_installed_config_classes(tf):
    from posenc import _hffamily
    if not tf.__version__.startswith("4.49"):
        pytest.skip(f"the table is transformers 4.49's; installed {tf.__version__}")
    from transformers import CONFIG_MAPPING
    seen = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model_type, cls in CONFIG_MAPPING.items():
            try:
                config = cls()
            except Exception:  # composite configs that need their parts
                continue
            for sub in (config, getattr(config, "text_config", None)):
                if sub is None or isinstance(sub, dict) or not any(
                        hasattr(sub, key) for key in ROTARY_KEYS):
                    continue
                found = class_defaults(sub)
                try:
                    wide = type(sub)(hidden_size=768, num_attention_heads=4)
                    if getattr(wide, "head_dim", None) not in (None, 192):
                        found["head_dim"] = wide.head_dim
                except Exception:
                    pass
                if found:
                    seen.setdefault(sub.model_type, found)
    # every default the table holds is the class's, and every class default is in the table
    # (the text configs of composites under their own model_type; GOT-OCR2's qwen2
    # text_config carries its parent's 1e6, not Qwen2Config's default)
    seen.pop("qwen2", None)
    for model_type, found in seen.items():
        table = _hffamily.FAMILY_DEFAULTS.get(model_type, {})
        for key, value in found.items():
            if key == "partial_rotary_factor" and "rotary_pct" in found:
                continue  # GPT-NeoX copies rotary_pct
            assert table.get(key) == value, (model_type, key, value, table)
    for model_type, table in _hffamily.FAMILY_DEFAULTS.items():
        assert model_type in seen, model_type
        for key, value in table.items():
            assert seen[model_type].get(key) == value, (model_type, key)


def test_family_defaults_fill_in_absent_keys(tf):
    # a phi dict without partial_rotary_factor: PhiConfig's 0.5, as transformers reads it
    d = {"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
         "max_position_embeddings": 2048}
    config = tf.PhiConfig(**{k: v for k, v in d.items() if k != "model_type"})
    plan = from_hf(d)
    inv, _ = hf_default_inv_freq(config)
    assert plan.rotary_dim == 2 * inv.shape[0] == 40
    np.testing.assert_allclose(plan.freqs, inv, rtol=1e-6)
    # a mixtral dict without rope_theta: 1e6; a gemma dict without head_dim: 256
    mixtral = {"model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32}
    assert from_hf(mixtral).hf.base == tf.MixtralConfig().rope_theta == 1e6
    gemma = {"model_type": "gemma", "hidden_size": 3072, "num_attention_heads": 16}
    assert from_hf(gemma).hf.head_dim == 256
    # a key given (null included) is the config's, not the default
    assert from_hf(dict(d, partial_rotary_factor=1.0)).rotary_dim == 80
    untyped = copy.deepcopy(d)
    del untyped["model_type"]
    assert from_hf(untyped).rotary_dim == 80  # no model_type: the generic defaults
