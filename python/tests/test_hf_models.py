"""posenc.hf on tiny random-weight HuggingFace models: Llama, Qwen2, Phi-3 (LongRoPE, partial
rotary 0.75), Qwen2-VL (text only, M-RoPE), and a dynamic-NTK Llama.

Each model is made here (torch.manual_seed, 2 layers, hidden 64, 4 heads, 2 KV heads, vocab
128, float32, eval mode, eager attention; no download). initializer_range is 0.2 (HF's 0.02
gives near-uniform attention, where the rotary angles hardly reach the logits).

1. compat: patch(model, "compat") gives HF's logits within float32 rounding, checked as
   max |diff| <= COMPAT_RTOL (1e-5) * max |logits|; measured 3.5e-6 to 7.4e-6 absolute,
   0.6e-6 to 1.2e-6 relative (posenc's and torch's cos/sin of one float32 angle differ by
   up to 2^-22), for batch 1 and 2, default and explicit position_ids, and decoding with a
   KV cache.
2. accurate: at positions >= 40000 posenc's accurate logits are much closer to a float64
   reference (the model in float64 with its own float64 rotary, Float64Rotary) than HF's
   float32 logits; measured max abs errors 4e-6 to 9e-6 (posenc accurate) against 3e-3 to
   9e-3 (HF float32, and posenc compat, which keeps HF's float32 angles); asserted 10x.
3. apply_rotary_pos_emb / apply_multimodal_rotary_pos_emb alone, on every ISA: float32
   within 2^-21 (|u| + |v|) of HF's formula (measured 6e-8, 83% bitwise); bfloat16 and
   float16 within one ulp of HF's formula evaluated in float32 and rounded once (measured:
   bitwise), and within 2 eps (|u| + |v|) of HF's own 16-bit evaluation, which rounds cos,
   both products and the sum (measured 0.6 eps); the fallback for other cos/sin bit for bit;
   gradients.
4. Batches whose rows have different position_ids: each row as if run alone.
Plus patch/unpatch: the original modules and classes come back, other models never change.
"""

import contextlib
import copy
import math
import types

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import posenc  # noqa: E402
from posenc import hf as phf  # noqa: E402

from transformers.models.llama import modeling_llama  # noqa: E402
from transformers.models.phi3 import modeling_phi3  # noqa: E402
from transformers.models.qwen2_vl import modeling_qwen2_vl  # noqa: E402

COMPAT_RTOL = 1e-5  # compat logits vs HF's, relative to max |logits|
L = 12  # tokens per sequence
FAR = 40000  # positions past 32k for the accuracy test

COMMON = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, initializer_range=0.2,
              attn_implementation="eager")


def _llama():
    return transformers.LlamaConfig(**COMMON, max_position_embeddings=2048,
                                    rope_theta=10000.0), transformers.LlamaForCausalLM


def _qwen2():
    return transformers.Qwen2Config(**COMMON, max_position_embeddings=4096, rope_theta=1000000.0,
                                    sliding_window=None), transformers.Qwen2ForCausalLM


def _phi3():
    # LongRoPE with factors for 6 pairs (head_dim 16, partial_rotary_factor 0.75), the
    # original context at the config level (as Phi-3's configs keep it)
    short = [1.0, 1.05, 1.2, 1.5, 2.0, 3.0]
    long = [1.0, 1.3, 2.1, 4.5, 9.0, 17.0]
    config = transformers.Phi3Config(
        **COMMON, max_position_embeddings=131072, original_max_position_embeddings=4096,
        rope_theta=10000.0, partial_rotary_factor=0.75, pad_token_id=0, bos_token_id=1,
        eos_token_id=2,
        rope_scaling={"type": "longrope", "short_factor": short, "long_factor": long})
    return config, transformers.Phi3ForCausalLM


def _qwen2_vl():
    vision = dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2,
                  patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
    config = transformers.Qwen2VLConfig(
        **COMMON, max_position_embeddings=32768, rope_theta=1000000.0,
        rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}, vision_config=vision,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, vision_start_token_id=120,
        vision_end_token_id=121, image_token_id=122, video_token_id=123)
    return config, transformers.Qwen2VLForConditionalGeneration


def _llama_dynamic():
    config = transformers.LlamaConfig(**COMMON, max_position_embeddings=2048,
                                      rope_theta=10000.0,
                                      rope_scaling={"rope_type": "dynamic", "factor": 4.0})
    return config, transformers.LlamaForCausalLM


def _mistral():
    return transformers.MistralConfig(**COMMON, max_position_embeddings=32768,
                                      rope_theta=1000000.0, sliding_window=None
                                      ), transformers.MistralForCausalLM


def _gemma():
    return transformers.GemmaConfig(**COMMON, head_dim=16, max_position_embeddings=8192,
                                    rope_theta=10000.0), transformers.GemmaForCausalLM


def _gemma2():
    # Gemma 2: head_dim of its own, soft-capping, sliding-window layers (all within the
    # window here), query_pre_attn_scalar
    return transformers.Gemma2Config(**COMMON, head_dim=32, max_position_embeddings=8192,
                                     rope_theta=10000.0, sliding_window=4096,
                                     query_pre_attn_scalar=32), transformers.Gemma2ForCausalLM


def _olmo2():
    return transformers.Olmo2Config(**COMMON, max_position_embeddings=4096, rope_theta=500000.0
                                    ), transformers.Olmo2ForCausalLM


# the families posenc.hf patches beyond the first four (transformers 4.49 has no Qwen3 and
# no Gemma 3: they came with 4.51 and 4.50)
FAMILIES = {"mistral": _mistral, "gemma": _gemma, "gemma2": _gemma2, "olmo2": _olmo2}
MODELS = {"llama": _llama, "qwen2": _qwen2, "phi3": _phi3, "qwen2_vl": _qwen2_vl, **FAMILIES}
EXTRA = {"llama_dynamic": _llama_dynamic}
_built = {}


def model_of(name):
    """The tiny model (built once per name; tests must leave it unpatched)."""
    if name not in _built:
        config, cls = {**MODELS, **EXTRA}[name]()
        torch.manual_seed(1234)
        _built[name] = cls(config).eval()
    return _built[name]


def mrope(name):
    return name == "qwen2_vl"


def ids_of(batch, seed=7):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(3, 120, (batch, L), generator=generator)  # no vision tokens


def positions_of(name, starts, offsets=(0, 0, 0), steps=None):
    """position_ids for rows starting at `starts` (row b advancing by steps[b], default 1):
    [B, L], or for M-RoPE (3, B, L) with the temporal/height/width rows offset from each
    other (as vision tokens have them), so that the sections matter."""
    steps = steps or [1] * len(starts)
    base = torch.stack([start + step * torch.arange(L) for start, step in zip(starts, steps)])
    if not mrope(name):
        return base
    return torch.stack([base + off for off in offsets])


def logits(model, ids, position_ids=None):
    # no cache: Gemma 2 would make a HybridCache, which needs torch 2's torch._dynamo
    with torch.no_grad():
        return model(input_ids=ids, position_ids=position_ids, use_cache=False).logits


def rotary_of(model):
    return model.model.rotary_emb


# --- a float64 rotary module for the reference -----------------------------------------------

class Float64Rotary(torch.nn.Module):
    """HF's rotary formulas (default, dynamic NTK and LongRoPE), every step in float64: float64
    frequencies, float64 angles, float64 cos/sin (HF's own module forces float32 angles even
    in a float64 model). M-RoPE configs get (3, B, L, R) tables as Qwen2-VL's module."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.head_dim = getattr(config, "head_dim", None) or \
            config.hidden_size // config.num_attention_heads
        self.dim = int(self.head_dim * getattr(config, "partial_rotary_factor", 1.0))
        scaling = getattr(config, "rope_scaling", None) or {}
        self.rope_type = scaling.get("rope_type", scaling.get("type", "default"))

    def frequencies(self, seq_len):
        exponent = torch.arange(0, self.dim, 2, dtype=torch.float64) / self.dim
        base = float(self.config.rope_theta)
        if self.rope_type == "dynamic":  # dynamic NTK: a larger base past the context
            factor, context = self.config.rope_scaling["factor"], \
                self.config.max_position_embeddings
            seq_len = max(seq_len, context)
            base *= (factor * seq_len / context - (factor - 1)) ** (self.dim / (self.dim - 2))
        power = torch.tensor(base, dtype=torch.float64) ** exponent
        if self.rope_type != "longrope":
            return 1.0 / power, 1.0
        scaling = self.config.rope_scaling
        original = self.config.original_max_position_embeddings
        factor = self.config.max_position_embeddings / original
        key = "long_factor" if seq_len > original else "short_factor"
        ext = torch.tensor(scaling[key], dtype=torch.float64)
        attention = math.sqrt(1 + math.log(factor) / math.log(original)) if factor > 1 else 1.0
        return 1.0 / (ext * power), attention

    def forward(self, x, position_ids):
        inv_freq, attention = self.frequencies(int(position_ids.max()) + 1)
        angles = position_ids.to(torch.float64)[..., None] * inv_freq
        emb = torch.cat((angles, angles), dim=-1)
        return ((emb.cos() * attention).to(x.dtype), (emb.sin() * attention).to(x.dtype))


def reference_model(model):
    ref = copy.deepcopy(model).double()
    ref.model.rotary_emb = Float64Rotary(model.config)
    return ref


# --- 1. compat ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MODELS))
def test_compat_logits_match_hf(name, monkeypatch):
    model = model_of(name)
    calls = []
    real = phf._apply_direct  # posenc's C rotation, as the attention and the tables call it
    monkeypatch.setattr(phf, "_apply_direct",
                        lambda *a, **kw: calls.append(1) or real(*a, **kw))
    ids1, ids2 = ids_of(1), ids_of(2, seed=8)
    given = positions_of(name, [5, 300], offsets=(0, 3, 5))
    cases = [(ids1, None), (ids2, None), (ids2, given)]
    expected = [logits(model, ids, pos) for ids, pos in cases]
    with phf.patched(model, "compat"):
        assert phf.patch_mode(model) == "compat"
        assert isinstance(rotary_of(model), phf.RotaryEmbedding)
        got = [logits(model, ids, pos) for ids, pos in cases]
    n_layers = model.config.num_hidden_layers
    # per forward: the cos/sin tables, then q and k of every layer through posenc
    assert len(calls) == len(cases) * (1 + 2 * n_layers)
    for want, have in zip(expected, got):
        scale = want.abs().max().item()
        err = (have - want).abs().max().item()
        print(f"{name}: compat vs HF max |diff| {err:.2e} ({err / scale:.1e} of max |logits| "
              f"{scale:.2f})")
        assert err <= COMPAT_RTOL * scale


@pytest.mark.parametrize("name", list(MODELS))
def test_compat_cos_sin_match_hf(name):
    """The tables themselves: HF's module and posenc's compat module on the same positions."""
    model = model_of(name)
    hf_rotary = rotary_of(model)
    ours = phf.RotaryEmbedding(model.config, "compat", hf_module=hf_rotary)
    x = torch.zeros(1, dtype=torch.float32)
    for starts in ([0, 17], [5000, FAR]):
        pos = positions_of(name, starts, offsets=(0, 2, 4))
        hc, hs = hf_rotary(x, pos)
        pc, ps = ours(x, pos)
        fresh = phf.RotaryEmbedding(model.config, "compat")(x, pos)  # ROPE_INIT_FUNCTIONS'
        assert torch.equal(fresh[0], pc) and torch.equal(fresh[1], ps)
        assert pc.shape == hc.shape and ps.shape == hs.shape and pc.dtype == hc.dtype
        scale = ours.attention_scaling
        assert (pc - hc).abs().max().item() <= 2 ** -21 * scale
        assert (ps - hs).abs().max().item() <= 2 ** -21 * scale


# --- 2. accurate past 32k ----------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MODELS) + list(EXTRA))
def test_accurate_beats_hf_float32_far_out(name):
    model = model_of(name)
    ids = ids_of(2)
    pos = positions_of(name, [FAR, 3 * FAR + 123], offsets=(0, 40, 90))
    ref = logits(reference_model(model), ids, pos)
    hf_err = (logits(model, ids, pos).double() - ref).abs().max().item()
    with phf.patched(model, "accurate"):
        posenc_err = (logits(model, ids, pos).double() - ref).abs().max().item()
        with phf.patched(model, "compat"):
            compat_err = (logits(model, ids, pos).double() - ref).abs().max().item()
        assert phf.patch_mode(model) == "accurate"
    print(f"{name}: max |logits - float64 reference| at positions >= {FAR}: posenc accurate "
          f"{posenc_err:.2e}, HF float32 {hf_err:.2e}, posenc compat {compat_err:.2e}, "
          f"max |logits| {ref.abs().max().item():.2f}")
    assert posenc_err < hf_err / 10
    assert compat_err > posenc_err  # compat keeps HF's float32 angles and their error


def test_dynamic_compat_follows_hf_state():
    """Dynamic NTK: HF recomputes inv_freq when a call goes past the cached length and
    resets it below the original context; compat follows call by call."""
    hf_model = copy.deepcopy(model_of("llama_dynamic"))  # its rotary state changes here
    model = copy.deepcopy(hf_model)
    ids = ids_of(1)
    phf.patch(model, "compat")
    for start in (0, 3000, 100, 9000, 5000, 10):
        pos = positions_of("llama_dynamic", [start])
        want, have = logits(hf_model, ids, pos), logits(model, ids, pos)
        assert (have - want).abs().max().item() <= COMPAT_RTOL * want.abs().max().item()
        assert torch.equal(rotary_of(model)._hf.inv_freq, rotary_of(hf_model).inv_freq.float())


@pytest.mark.parametrize("name", ["llama", "qwen2_vl"])
def test_accurate_near_reference_at_ordinary_positions(name):
    model = model_of(name)
    ids = ids_of(2)
    ref = logits(reference_model(model), ids)
    with phf.patched(model, "accurate"):
        err = (logits(model, ids).double() - ref).abs().max().item()
    assert err <= 1e-5 * ref.abs().max().item()


# --- 3. the apply functions alone --------------------------------------------------------------

def _qk(batch, heads, kv_heads, head_dim, dtype, seed=3):
    """q, k as HF's attention passes them: [B, L, H, D] storage seen as [B, H, L, D]."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, L, heads, head_dim, generator=generator).to(dtype).transpose(1, 2)
    k = torch.randn(batch, L, kv_heads, head_dim, generator=generator).to(dtype).transpose(1, 2)
    return q, k


def _mantissa_bits(dtype):
    return {torch.float32: 23, torch.bfloat16: 7, torch.float16: 10}[dtype]


def _ulp_distance(a, b):
    """max |a - b| / ulp(b) where ulp(x) = 2^(floor(log2 |x|) - mantissa bits) (at least the
    dtype's smallest normal's ulp)."""
    bits = _mantissa_bits(b.dtype)
    b64, a64 = b.double(), a.double()
    floor = torch.finfo(b.dtype).tiny
    exponent = torch.floor(torch.log2(b64.abs().clamp(min=floor)))
    ulp = torch.pow(torch.tensor(2.0, dtype=torch.float64), exponent - bits)
    return ((a64 - b64).abs() / ulp).max().item()


@pytest.fixture
def on_isa(isa):
    """Runs the test with posenc's `isa` active (every ISA this machine has), then puts the
    former one back."""
    former = posenc.active_isa()
    posenc.set_isa(isa)
    yield isa
    posenc.set_isa(former)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["llama", "phi3"])
def test_apply_rotary_pos_emb_vs_hf(name, dtype, on_isa):
    model = model_of(name)
    config = model.config
    hf_apply = modeling_phi3.apply_rotary_pos_emb if name == "phi3" else \
        modeling_llama.apply_rotary_pos_emb
    rotary = phf.RotaryEmbedding(config, "compat", hf_module=rotary_of(model))
    pos = positions_of(name, [3, 5000])
    q, k = _qk(2, 4, 2, 16, dtype)
    cos, sin = rotary(q, pos)
    assert cos.dtype == dtype and cos.shape == (2, L, rotary.rotary_dim)
    got_q, got_k = phf.apply_rotary_pos_emb(q, k, cos, sin)
    assert got_q.shape == q.shape and got_k.shape == k.shape and got_q.dtype == dtype
    # HF's formula in float32 on float32 tables, rounded once to the dtype
    cos32, sin32 = rotary(torch.zeros(1), pos)
    want_q, want_k = (x.to(dtype) for x in hf_apply(q.float(), k.float(), cos32, sin32))
    scale_q = q.float().abs().amax(dim=-1, keepdim=True)
    scale_k = k.float().abs().amax(dim=-1, keepdim=True)
    if dtype == torch.float32:
        # the rotation of u, v in float: within 2^-21 (|u| + |v|) of HF's (posenc may fuse)
        assert ((got_q - want_q).abs() <= 2 ** -21 * 2 * scale_q).all()
        assert ((got_k - want_k).abs() <= 2 ** -21 * 2 * scale_k).all()
    else:
        # one rounding of (nearly) the same float32 value: at most one ulp apart
        assert _ulp_distance(got_q, want_q) <= 1.0
        assert _ulp_distance(got_k, want_k) <= 1.0
        # HF's own 16-bit evaluation rounds cos, both products and the sum: a few ulps of
        # |u| + |v| away, not of the result
        hf_q, hf_k = hf_apply(q, k, cos, sin)
        eps = torch.finfo(dtype).eps
        assert ((got_q.float() - hf_q.float()).abs() <= 2 * eps * 2 * scale_q).all()
        assert ((got_k.float() - hf_k.float()).abs() <= 2 * eps * 2 * scale_k).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_apply_multimodal_vs_hf(dtype, on_isa):
    model = model_of("qwen2_vl")
    sections = model.config.rope_scaling["mrope_section"]
    rotary = phf.RotaryEmbedding(model.config, "compat", hf_module=rotary_of(model))
    pos = positions_of("qwen2_vl", [10, 2000], offsets=(0, 7, 30))
    q, k = _qk(2, 4, 2, 16, dtype)
    cos, sin = rotary(q, pos)
    assert cos.shape == (3, 2, L, 16) and cos.dtype == dtype
    got_q, got_k = phf.apply_multimodal_rotary_pos_emb(q, k, cos, sin, sections)
    cos32, sin32 = rotary(torch.zeros(1), pos)
    want_q, want_k = (x.to(dtype) for x in modeling_qwen2_vl.apply_multimodal_rotary_pos_emb(
        q.float(), k.float(), cos32, sin32, sections))
    if dtype == torch.float32:
        scale = q.abs().amax(dim=-1, keepdim=True)
        assert ((got_q - want_q).abs() <= 2 ** -21 * 2 * scale).all()
    else:
        assert _ulp_distance(got_q, want_q) <= 1.0
        assert _ulp_distance(got_k, want_k) <= 1.0
    # other sections than the factors were made for: HF's formula on the tables
    other = [4, 2, 2]
    hf_q, hf_k = modeling_qwen2_vl.apply_multimodal_rotary_pos_emb(q, k, cos, sin, other)
    fb_q, fb_k = phf.apply_multimodal_rotary_pos_emb(q, k, cos, sin, other)
    assert torch.equal(fb_q, hf_q) and torch.equal(fb_k, hf_k)


def test_apply_fallback_is_hf_bit_for_bit(monkeypatch):
    model = model_of("llama")
    calls = []
    real = phf._apply_direct  # posenc's rotation of q and k (and of the tables)
    monkeypatch.setattr(phf, "_apply_direct",
                        lambda *a, **kw: calls.append(1) or real(*a, **kw))
    pos = positions_of("llama", [0, 77])
    q, k = _qk(2, 4, 2, 16, torch.float32)
    cos, sin = rotary_of(model)(q, pos)  # HF's own tables: no factors
    for dim, (qq, kk) in ((1, (q, k)), (2, (q.transpose(1, 2), k.transpose(1, 2)))):
        want = modeling_llama.apply_rotary_pos_emb(qq, kk, cos, sin, unsqueeze_dim=dim)
        got = phf.apply_rotary_pos_emb(qq, kk, cos, sin, unsqueeze_dim=dim)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert not calls
    # posenc's tables changed in place, or copied: HF's formula on them
    rotary = phf.RotaryEmbedding(model.config, "accurate")
    cos, sin = rotary(q, pos)
    calls.clear()  # the tables
    for c, s in ((cos.clone(), sin.clone()), (cos.mul_(1.0), sin)):
        want = modeling_llama.apply_rotary_pos_emb(q, k, c, s)
        got = phf.apply_rotary_pos_emb(q, k, c, s)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert not calls
    # a float64 model: HF's formula too (posenc rotates float32 / bfloat16 / float16)
    q64, k64 = q.double(), k.double()
    cos, sin = rotary(q64, pos)
    calls.clear()
    assert cos.dtype == torch.float64
    want = modeling_llama.apply_rotary_pos_emb(q64, k64, cos, sin)
    got = phf.apply_rotary_pos_emb(q64, k64, cos, sin)
    assert torch.equal(got[0], want[0]) and not calls


def test_apply_blhd_and_broadcast_batch():
    """unsqueeze_dim=2 ([B, L, H, D]) and one row of positions for a batch of 2."""
    model = model_of("qwen2")
    rotary = phf.RotaryEmbedding(model.config, "accurate")
    q, k = _qk(2, 4, 2, 16, torch.float32)
    cos, sin = rotary(q, positions_of("qwen2", [FAR])[:1])
    assert cos.shape == (1, L, 16)
    want = modeling_llama.apply_rotary_pos_emb(q, k, cos, sin)
    got = phf.apply_rotary_pos_emb(q, k, cos, sin)
    got2 = phf.apply_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin,
                                    unsqueeze_dim=2)
    assert torch.equal(got2[0].transpose(1, 2), got[0])
    assert torch.equal(got2[1].transpose(1, 2), got[1])
    assert (got[0] - want[0]).abs().max().item() <= 2 ** -20 * q.abs().max().item()


def test_apply_gradient_is_hf():
    model = model_of("phi3")  # partial rotary: the kept elements pass their gradient
    rotary = phf.RotaryEmbedding(model.config, "accurate")
    pos = positions_of("phi3", [2, 9000])
    q0, k0 = _qk(2, 4, 2, 16, torch.float32)
    cos, sin = rotary(q0, pos)
    weight = torch.randn(2, 4, L, 16, generator=torch.Generator().manual_seed(5))
    grads = []
    for apply in (phf.apply_rotary_pos_emb, modeling_phi3.apply_rotary_pos_emb):
        q, k = q0.clone().requires_grad_(), k0.clone().requires_grad_()
        out_q, out_k = apply(q, k, cos, sin)
        ((out_q * weight).sum() + out_k.sum()).backward()
        grads.append((q.grad, k.grad))
    for ours, theirs in zip(*grads):
        assert (ours - theirs).abs().max().item() <= 1e-6 * theirs.abs().max().item()


# --- 4. batches of different positions ---------------------------------------------------------

@pytest.mark.parametrize("mode", ["compat", "accurate"])
@pytest.mark.parametrize("name", list(MODELS))
def test_batch_rows_with_their_own_positions(name, mode):
    model = model_of(name)
    ids = ids_of(2, seed=11)
    # both rows past Phi-3's original context (LongRoPE picks its factors by the batch's
    # largest position, as HF does), the second at another spacing
    pos = positions_of(name, [5000, 70000], offsets=(0, 5, 11), steps=[1, 3])
    with phf.patched(model, mode):
        together = logits(model, ids, pos)
        for b in range(2):
            alone = logits(model, ids[b:b + 1], pos[..., b:b + 1, :])
            assert torch.allclose(together[b:b + 1], alone, rtol=0, atol=1e-5)
    # the rows really are at different positions: swapping them changes the result
    with phf.patched(model, mode):
        swapped = logits(model, ids, pos.flip(-2))
    assert not torch.allclose(swapped, together, rtol=0, atol=1e-3)


def test_rotary_batch_rows_match_single_rows():
    model = model_of("phi3")
    rotary = phf.RotaryEmbedding(model.config, "compat", hf_module=rotary_of(model))
    pos = positions_of("phi3", [1, 100])  # short factors for both rows
    x = torch.zeros(1)
    cos, sin = rotary(x, pos)
    for b in range(2):
        c, s = rotary(x, pos[b:b + 1])
        assert torch.equal(c, cos[b:b + 1]) and torch.equal(s, sin[b:b + 1])


# --- 16-bit models, training, generation -----------------------------------------------------

def test_bfloat16_model():
    """A bfloat16 model: posenc rotates bfloat16 q and k (rounding once); its logits are as
    close to the float32 model's as HF's bfloat16 logits are."""
    model = model_of("llama")
    ids = ids_of(2)
    pos = positions_of("llama", [7, 900])
    want = logits(model, ids, pos)
    model16 = copy.deepcopy(model).to(torch.bfloat16)
    hf_err = (logits(model16, ids, pos).float() - want).abs().max().item()
    with phf.patched(model16, "compat"):
        got = logits(model16, ids, pos)
    assert got.dtype == torch.bfloat16
    err = (got.float() - want).abs().max().item()
    print(f"bfloat16 llama: max |logits - float32 logits|: posenc {err:.3f}, HF {hf_err:.3f}")
    assert err <= 2 * hf_err


def test_training_gradients_match_hf(monkeypatch):
    model = model_of("qwen2")
    ids = ids_of(2)
    grads = []
    backward_calls = []
    real = phf.rope_apply

    def counting(*args, **kwargs):
        backward_calls.append(kwargs.get("inverse", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(phf, "rope_apply", counting)
    for patch_it in (False, True):
        trained = copy.deepcopy(model).train()
        context = phf.patched(trained, "compat") if patch_it else contextlib.nullcontext()
        with context:
            out = trained(input_ids=ids, labels=ids)
            out.loss.backward()
        grads.append({n: p.grad for n, p in trained.named_parameters() if p.grad is not None})
    # q and k of both layers rotated back by posenc in the backward pass
    assert backward_calls.count(True) == 2 * model.config.num_hidden_layers
    assert grads[0].keys() == grads[1].keys()
    for key in grads[0]:
        want, have = grads[0][key], grads[1][key]
        assert (have - want).abs().max().item() <= 1e-4 * want.abs().max().item() + 1e-9, key


def greedy(model, ids, steps):
    """Greedy decoding with HF's DynamicCache, one token per step after the prompt (the
    positions from HF's cache bookkeeping; Qwen2-VL's from its rope deltas): the tokens and
    the logits of every step. (Not model.generate: it imports torch.distributed.fsdp,
    which this environment's torch 1.13 cannot import on Python 3.11.)"""
    cache = transformers.DynamicCache()
    tokens, step_ids, seen, all_logits = ids, ids, 0, []
    with torch.no_grad():
        for _ in range(steps):
            n = step_ids.shape[1]
            out = model(input_ids=step_ids, past_key_values=cache, use_cache=True,
                        cache_position=torch.arange(seen, seen + n),
                        attention_mask=torch.ones(ids.shape[0], seen + n, dtype=torch.long))
            all_logits.append(out.logits[:, -1])
            step_ids = out.logits[:, -1].argmax(-1, keepdim=True)
            tokens, seen = torch.cat((tokens, step_ids), dim=1), seen + n
    return tokens, torch.stack(all_logits)


@pytest.mark.parametrize("name", ["llama", "qwen2_vl"])
def test_decoding_with_cache(name):
    model = model_of(name)
    ids = ids_of(2)
    want_tokens, want = greedy(model, ids, 5)
    with phf.patched(model, "compat"):
        got_tokens, got = greedy(model, ids, 5)
    assert torch.equal(got_tokens, want_tokens)
    assert (got - want).abs().max().item() <= COMPAT_RTOL * want.abs().max().item()


# --- patch / unpatch ---------------------------------------------------------------------------

def test_patch_unpatch_restores_and_does_not_leak():
    model = model_of("llama")
    other = copy.deepcopy(model)
    ids = ids_of(2)
    pos = positions_of("llama", [FAR, FAR])
    before = logits(model, ids, pos)
    rotary = rotary_of(model)
    classes = [type(layer.self_attn) for layer in model.model.layers]
    apply_global = modeling_llama.apply_rotary_pos_emb

    assert phf.patch(model, "accurate") is model
    assert modeling_llama.apply_rotary_pos_emb is apply_global  # the module is not touched
    for layer, cls in zip(model.model.layers, classes):
        assert type(layer.self_attn) is not cls and isinstance(layer.self_attn, cls)
    assert not torch.equal(logits(model, ids, pos), before)
    assert torch.equal(logits(other, ids, pos), before)  # another model: HF's own
    phf.patch(model, "compat")  # switching modes
    assert phf.patch_mode(model) == "compat"

    assert phf.unpatch(model) is True
    assert phf.unpatch(model) is False
    assert phf.patch_mode(model) is None
    assert rotary_of(model) is rotary
    assert [type(layer.self_attn) for layer in model.model.layers] == classes
    assert torch.equal(logits(model, ids, pos), before)
    assert dict(model.state_dict()).keys() == dict(other.state_dict()).keys()


def test_patched_model_deepcopies():
    model = model_of("phi3")
    ids = ids_of(2)
    with phf.patched(model, "accurate"):
        want = logits(model, ids)
        twin = copy.deepcopy(model)
    assert phf.patch_mode(twin) == "accurate" and phf.patch_mode(model) is None
    assert torch.equal(logits(twin, ids), want)
    assert phf.unpatch(twin)
    assert type(rotary_of(twin)) is modeling_phi3.Phi3RotaryEmbedding


def test_patched_context_restores_on_error_and_former_mode():
    model = model_of("qwen2")
    with pytest.raises(RuntimeError):
        with phf.patched(model, "compat"):
            raise RuntimeError("inside")
    assert phf.patch_mode(model) is None
    phf.patch(model, "accurate")
    try:
        with phf.patched(model, "compat"):
            assert phf.patch_mode(model) == "compat"
        assert phf.patch_mode(model) == "accurate"
    finally:
        phf.unpatch(model)
    assert not isinstance(rotary_of(model), phf.RotaryEmbedding)


def test_qwen2_vl_patch_leaves_vision_and_attention_rotaries():
    model = model_of("qwen2_vl")
    vision = [type(m) for m in model.visual.modules()]
    with phf.patched(model, "accurate"):
        assert isinstance(model.model.rotary_emb, phf.RotaryEmbedding)
        assert [type(m) for m in model.visual.modules()] == vision
        for layer in model.model.layers:
            assert isinstance(layer.self_attn.rotary_emb, modeling_qwen2_vl.Qwen2VLRotaryEmbedding)


def test_unknown_model_type_is_refused():
    module = torch.nn.Linear(2, 2)
    module.config = types.SimpleNamespace(model_type="gpt2")
    with pytest.raises(ValueError, match="unsupported model type 'gpt2'"):
        phf.patch(module)
    with pytest.raises(ValueError, match="unsupported model type"):
        phf.patch(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="mode"):
        phf.patch(model_of("llama"), "fast")
    assert phf.patch_mode(model_of("llama")) is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_direct_path_is_the_generic_binding(dtype):
    """The attention's per-layer call (_apply_direct: the C function on the tensors'
    strides) is bitwise posenc.rope_apply: [B, H, L, D] views, [B, L, H, D], one token,
    one head, a batch sharing its rows, and the float32 -> 16-bit tables."""
    plan = posenc.RopePlan(16, 10000.0)
    positions = torch.tensor([[3, 4, 5], [70000, 70001, 70002]])
    factors = posenc.rope_factors(plan, positions=positions)
    gen = torch.Generator().manual_seed(3)
    cases = []
    for shape, rows in (((2, 3, 4, 16), 3), ((2, 1, 1, 16), 3), ((1, 3, 4, 16), 0)):
        storage = torch.randn(shape, generator=gen).to(dtype)  # [B, L, H, D]
        cases += [(storage, "BLHD", rows), (storage.transpose(1, 2), "BHLD", rows),
                  (storage.transpose(1, 2).contiguous(), "BHLD", rows)]
    for x, order, rows in cases:
        got = phf._apply_direct(factors, x, order, rows)
        want = posenc.rope_apply(factors, x, axes=order, row_batch_stride=rows)
        assert torch.equal(got, want), (tuple(x.shape), order)
    unit = torch.zeros(16)
    unit[:8] = 1
    src = unit.view(1, 1, 1, -1).expand(2, 3, 1, 16)
    for out in (torch.float32, torch.bfloat16, torch.float16):
        got = phf._apply_direct(factors, src, "BLHD", 3, torch.empty((2, 3, 1, 16), dtype=out))
        want = posenc.rope_apply(factors, src, axes="BLHD", dst_dtype=str(out)[6:])
        assert torch.equal(got, want)


# --- accurate mode reads configs as the installed transformers (issue 26, case 1) ------------

def _qwen2_yarn():
    # Qwen2.5 / Qwen3's YaRN: transformers 4.49 computes the correction range from
    # max_position_embeddings (131072), 5.x from original_max_position_embeddings (32768)
    return transformers.Qwen2Config(**COMMON, max_position_embeddings=131072,
                                    rope_theta=1000000.0, sliding_window=None,
                                    rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                  "original_max_position_embeddings": 32768}
                                    ), transformers.Qwen2ForCausalLM


def _llama_longrope():
    # LongRoPE on a Llama: 4.49's LlamaRotaryEmbedding keeps the short factors at every length
    short = [1.0, 1.05, 1.2, 1.5, 2.0, 3.0, 4.0, 5.0]
    long = [1.0, 1.3, 2.1, 4.5, 9.0, 17.0, 25.0, 40.0]
    return transformers.LlamaConfig(**COMMON, max_position_embeddings=4096, rope_theta=10000.0,
                                    rope_scaling={"rope_type": "longrope", "factor": 4.0,
                                                  "original_max_position_embeddings": 1024,
                                                  "short_factor": short, "long_factor": long}
                                    ), transformers.LlamaForCausalLM


EXTRA.update(qwen2_yarn=_qwen2_yarn, llama_longrope=_llama_longrope)


@pytest.mark.parametrize("name,start,rtol", [("qwen2_yarn", 100, 1e-5),
                                             ("llama_longrope", 2000, 1e-4)])
def test_accurate_follows_the_installed_transformers(name, start, rtol):
    """posenc.hf.patch's default mode on configs that transformers 4.x and 5.x read
    differently: the logits are HF's (the installed 4.49's modules), within float32 rounding
    (HF's float32 angles at positions near 2000 are off by ~1e-4 rad: rtol 1e-4 there), not
    5.x's reading, which used to be followed (the yarn frequencies differ by up to 55%, the
    Llama switched to the long factors); and no HfReadingWarning is raised."""
    import warnings
    model = model_of(name)
    ids = ids_of(2)
    pos = positions_of(name, [start, start + 37])
    want = logits(model, ids, pos)
    scale = want.abs().max().item()
    with warnings.catch_warnings():
        warnings.simplefilter("error", posenc.HfReadingWarning)
        with phf.patched(model):
            assert phf.patch_mode(model) == "accurate"
            assert rotary_of(model).plan().hf.transformers == "4"
            err = (logits(model, ids, pos) - want).abs().max().item()
            # the same model rotating by transformers 5.x's reading of its config
            rotary_of(model)._plan = posenc.RopePlan.from_hf_config(model.config,
                                                                    transformers="5")
            err5 = (logits(model, ids, pos) - want).abs().max().item()
    print(f"{name}: max |logits - HF 4.49's| relative to max |logits|: accurate "
          f"{err / scale:.1e}, with 5.x's reading {err5 / scale:.1e}")
    assert err <= rtol * scale
    assert err5 > 100 * err


# --- the families patched beyond Llama, Qwen2, Phi-3, Qwen2-VL --------------------------------

@pytest.mark.parametrize("mode", ["compat", "accurate"])
@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_patched_matches_hf(name, mode):
    """Mistral, Gemma, Gemma 2, OLMo 2 patched: logits within 1e-5 (relative to the largest)
    of the unpatched model's at ordinary positions, and greedy decoding with a KV cache gives
    HF's tokens, in both modes; every attention module's rotation goes through posenc."""
    model = model_of(name)
    ids = ids_of(2)
    pos = positions_of(name, [0, 300])
    want = logits(model, ids, pos)
    want_tokens, want_steps = greedy(model, ids, 5)
    with phf.patched(model, mode):
        attentions = [m for m in model.modules() if hasattr(m, "_posenc_original_class")]
        assert len(attentions) == model.config.num_hidden_layers
        assert isinstance(rotary_of(model), phf.RotaryEmbedding)
        got = logits(model, ids, pos)
        got_tokens, got_steps = greedy(model, ids, 5)
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    print(f"{name} {mode}: max |logits - HF's| {err / scale:.1e} of max |logits|")
    assert err <= COMPAT_RTOL * scale
    assert torch.equal(got_tokens, want_tokens)
    assert (got_steps - want_steps).abs().max().item() <= \
        COMPAT_RTOL * want_steps.abs().max().item()
    assert not any(hasattr(m, "_posenc_original_class") for m in model.modules())
