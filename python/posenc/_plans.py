"""RoPE frequency plans (RopePlan) and their scaled, float32-recipe and ggml forms."""

import ctypes
import sys

import numpy as np

from . import _lib
from ._lib import lib
from ._core import _Plan, _address, _check, _float, _int, _plan_handle, _real_vector, _size


def _scaling_struct(rope_scaling, base, max_position_embeddings, original_max_position_embeddings,
                    seq_len):
    """(posenc_rope_scaling, arrays it points to) of a HF rope_scaling dict (RopePlan.scaled).
    A rope_theta in the dict must equal base; partial_rotary_factor (a config key: the
    rotary_dim is given) must be 1."""
    scaling = dict(rope_scaling or {})
    kind = scaling.pop("rope_type", scaling.pop("type", "default"))
    if kind not in _lib.ROPE_SCALING_TYPES:
        raise ValueError(f"unknown rope_type {kind!r} (RopePlan.from_hf_config reads whole HF "
                         "configs, Qwen2-VL's \"mrope\" among them)")
    c = _lib.RopeScaling(type=_lib.ROPE_SCALING_TYPES[kind])
    c.max_position_embeddings = _size("max_position_embeddings", max_position_embeddings)
    c.original_max_position_embeddings = _size("original_max_position_embeddings",
                                               original_max_position_embeddings)
    c.seq_len = _size("seq_len", seq_len)
    keep = []  # factor arrays, alive until the call returns
    for key, value in scaling.items():
        if key == "rope_theta":
            if _float(key, value) != _float("base", base):
                raise ValueError(f"rope_theta {value} in the dict contradicts base {base}: pass "
                                 "base=rope_theta, or use RopePlan.from_hf_config(config)")
        elif key == "partial_rotary_factor":
            if _float(key, value) != 1.0:
                raise ValueError(f"partial_rotary_factor {value}: RopePlan.scaled takes rotary_dim "
                                 "itself (int(head_dim * partial_rotary_factor)); drop the key, "
                                 "or use RopePlan.from_hf_config(config)")
        elif key == "truncate":
            c.no_truncate = 0 if value else 1
        elif key in ("short_factor", "long_factor", "pair_factors"):
            array = _real_vector(key, value, np.float64)
            keep.append(array)
            setattr(c, key, _address(array))
            setattr(c, key + "_len", array.shape[0])
        elif key in ("original_max_position_embeddings", "max_position_embeddings"):
            setattr(c, key, _size(key, value))
        elif key in ("factor", "attention_factor", "beta_fast", "beta_slow", "mscale",
                     "mscale_all_dim", "low_freq_factor", "high_freq_factor", "alpha"):
            setattr(c, key, 0.0 if value is None else _float(key, value))
        else:
            raise ValueError(f"unknown rope_scaling key {key!r} (RopePlan.from_hf_config reads "
                             "whole HF configs, with mrope_section and Phi-3-small's mscales)")
    return c, keep


def _torch_vector_floats():
    """The floats per vector of the CPU kernels the imported torch uses (RopePlan.hf_f32)."""
    torch = sys.modules.get("torch")
    if torch is None:
        raise ValueError("torch_vector_floats: torch is not imported; pass 16 (AVX512), 8 "
                         "(AVX2), 4 (aarch64) or 0 (torch's default kernels)")
    capability = None
    backend = getattr(getattr(torch, "backends", None), "cpu", None)
    if backend is not None and hasattr(backend, "get_cpu_capability"):
        capability = backend.get_cpu_capability()
    else:
        for line in torch.__config__.show().splitlines():
            if "CPU capability usage:" in line:
                capability = line.split(":", 1)[1].strip()
    table = {"AVX512": 16, "AVX2": 8, "DEFAULT": 0, "NEON": 4}
    if capability is None or capability.upper() not in table:
        raise ValueError(f"torch_vector_floats: unknown torch CPU capability {capability!r}; "
                         "pass it")
    return table[capability.upper()]


class RopePlan(_Plan):
    """A RoPE frequency plan: rotary_dim / 2 frequencies (double) and an attention factor.

    RopePlan(rotary_dim, base=10000.0, *, attention_factor=1.0) is posenc_rope_plan_create:
    w_i = base^(-2i/rotary_dim), i in [0, rotary_dim/2). rotary_dim: even, 2 .. 2^20;
    base: finite, > 0, != 1; attention_factor: finite, > 0 (multiplies cos and sin).
    Immutable and shareable between threads.
    """

    _destroy = staticmethod(lib.posenc_rope_plan_destroy)

    def __init__(self, rotary_dim, base=10000.0, *, attention_factor=1.0):
        super().__init__()
        self._adopt(lib.posenc_rope_plan_create, "posenc_rope_plan_create",
                    _size("rotary_dim", rotary_dim), _float("base", base),
                    _float("attention_factor", attention_factor))

    @classmethod
    def from_freqs(cls, freqs, *, attention_factor=1.0):
        """A plan from rotary_dim / 2 given frequencies in radians per position (finite; 0
        and negative allowed): posenc_rope_plan_create_from_freqs. Every RoPE scaling type
        (linear, NTK, YaRN, Llama 3, LongRoPE) reduces to this."""
        freqs = _real_vector("freqs", freqs, np.float64)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_from_freqs, "posenc_rope_plan_create_from_freqs",
                    2 * freqs.shape[0], _address(freqs),
                    _float("attention_factor", attention_factor))
        return plan

    @classmethod
    def scaled(cls, rotary_dim, base=10000.0, rope_scaling=None, *, max_position_embeddings=0,
               original_max_position_embeddings=0, seq_len=0):
        """A plan for a HuggingFace `rope_scaling` (or `rope_parameters`) dict:
        posenc_rope_plan_create_scaled, with the dict's keys as the posenc_rope_scaling
        fields of the same names. rope_scaling: None or a dict whose "rope_type" (or "type")
        is "default", "linear", "dynamic", "yarn", "longrope" ("su"), "llama3", or posenc's
        own "ntk_alpha" (key "alpha") and "pair_factors" (key "pair_factors"); "truncate":
        False sets no_truncate; a "rope_theta" must equal base and a "partial_rotary_factor"
        be 1 (ValueError otherwise: pass base and rotary_dim, or use from_hf_config, which
        reads a whole config); any other key is a ValueError. The keyword arguments come
        from the model config rather than the dict (Phi-3 keeps
        original_max_position_embeddings outside it) or from the sequence: seq_len =
        largest position + 1 for "dynamic" and "longrope"."""
        c, keep = _scaling_struct(rope_scaling, base, max_position_embeddings,
                                  original_max_position_embeddings, seq_len)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_scaled, "posenc_rope_plan_create_scaled",
                    _size("rotary_dim", rotary_dim), _float("base", base), ctypes.byref(c))
        return plan

    @classmethod
    def from_hf_config(cls, config, *, seq_len=None, f32=False, transformers=None,
                       layer_type=None):
        """The plan of a HuggingFace transformers model config: a PretrainedConfig object
        (a composite one such as Qwen2-VL's is read where its text model keeps the keys)
        or its dict. Reads every key HF reads: rope_theta, rope_scaling (4.x, "type" or
        "rope_type") or rope_parameters (5.x), partial_rotary_factor, head_dim (else
        hidden_size // num_attention_heads), max_position_embeddings,
        original_max_position_embeddings (config level or in the dict), mrope_section, and
        the families' own keys (GPT-NeoX's rotary_pct / rotary_emb_base, GPT-J's
        rotary_dim, DeepSeek's qk_rope_head_dim, Gemma 3's rope_local_base_freq, ...); an
        unknown key, or one the rope type does not read, or two that contradict each other,
        is a ValueError. The frequencies are exact (float64), or with f32=True HF's own
        float32 inv_freq bit for bit, as torch computes it on this CPU (hf_f32, with the
        imported torch's capability; with F32 angles, HF's angles exactly).

        transformers: where transformers 4.x and 5.x read a config differently (yarn,
        longrope and llama3 keys), the reading to follow: None for the installed
        transformers' (4.x: as 4.49), warning (posenc.HfReadingWarning) when the two readings
        of this config give different plans; "4" or "5" to choose one. layer_type:
        "sliding_attention" or "full_attention" where the layer types have their own RoPE
        (Gemma 3, transformers 5.x's per-layer rope_parameters).

        The plan's `hf` attribute describes the config (rope_type, head_dim, rotary_dim,
        base, mrope_section, mrope_interleaved, layout, transformers, seq_dependent). Its
        layout is the family's pair layout, which the kernels use when given no layout=.
        For "dynamic" and "longrope", whose frequencies HF derives from the sequence length,
        every kernel call takes that length from its own positions (largest position + 1),
        as HF's rotary module does each forward; seq_len given here fixes it instead."""
        from . import _hfconfig
        return _hfconfig.plan_from_hf_config(cls, config, seq_len, f32, transformers,
                                             layer_type)

    @classmethod
    def from_freqs_f32(cls, freqs, *, attention_factor=1.0):
        """A plan whose frequencies are, bit for bit, the given float32 ones (a model's own
        `inv_freq` buffer, a runtime's table): posenc_rope_plan_create_from_freqs_f32. With
        f32_angles=True every angle is (float)p * freqs[i] rounded to float, that code's
        own angle."""
        freqs = _real_vector("freqs", freqs, np.float32)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_from_freqs_f32,
                    "posenc_rope_plan_create_from_freqs_f32", 2 * freqs.shape[0],
                    _address(freqs), _float("attention_factor", attention_factor))
        return plan

    @classmethod
    def powf(cls, rotary_dim, base=10000.0, *, attention_factor=1.0):
        """w_i = 1.0f / powf(base, (float)(2i) / (float)R) in float with the C library's
        powf, as llama2.c and its kin compute it: posenc_rope_plan_create_powf (base is
        used as a float)."""
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_powf, "posenc_rope_plan_create_powf",
                    _size("rotary_dim", rotary_dim), _float("base", base),
                    _float("attention_factor", attention_factor))
        return plan

    @classmethod
    def hf_f32(cls, rotary_dim, base=10000.0, rope_scaling=None, *, torch_vector_floats=None,
               max_position_embeddings=0, original_max_position_embeddings=0, seq_len=0):
        """HF transformers' own float32 `inv_freq`, operation by operation as torch computes
        it on a CPU: posenc_rope_plan_create_hf_f32. rope_scaling and the keywords: as for
        scaled(). torch_vector_floats: 16 for torch's AVX512 CPU kernels, 8 for AVX2, 4 for
        aarch64, 0 for its "default" ones; None asks the imported torch which it uses
        (torch.backends.cpu.get_cpu_capability(), or torch.__config__.show() on torch
        1.x), a ValueError when torch is not imported."""
        if torch_vector_floats is None:
            torch_vector_floats = _torch_vector_floats()
        c, keep = _scaling_struct(rope_scaling, base, max_position_embeddings,
                                  original_max_position_embeddings, seq_len)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_hf_f32, "posenc_rope_plan_create_hf_f32",
                    _size("rotary_dim", rotary_dim), _float("base", base), ctypes.byref(c),
                    _int("torch_vector_floats", torch_vector_floats, 0, 2 ** 32 - 1))
        return plan

    @classmethod
    def from_ggml(cls, n_dims, freq_base, *, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
                  beta_fast=32.0, beta_slow=1.0, n_ctx_orig=0, freq_factors=None, mode=None,
                  sections=None):
        """The plan that rotates as llama.cpp / ggml's ggml_rope_ext does with these
        arguments (its YaRN recipe, in double): posenc_rope_plan_create_ggml.

        With theta_scale = freq_base^(-2/n_dims) and w_i = theta_scale^i / freq_factors[i],
            w'_i = w_i * (freq_scale * (1 - m_i) + m_i),  m_i = ramp(i) * ext_factor,
            ramp(i) = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1),
            lo = max(0, floor(c(beta_fast))), hi = min(n_dims - 1, ceil(c(beta_slow))),
            c(b) = n_dims * ln(n_ctx_orig / (2 pi b)) / (2 ln(freq_base)),
        and attention factor attn_factor (times 1 + 0.1 ln(1 / freq_scale) if ext_factor != 0).
        n_dims: R (rope.dimension_count); freq_scale: 1 / rope.scaling.factor (0 -> 1);
        attn_factor: 0 -> 1; beta_fast, beta_slow, n_ctx_orig: read only when ext_factor != 0
        (then n_ctx_orig > 0). freq_factors: None or n_dims / 2 divisors > 0 (the GGUF
        rope_freqs tensor), used as float32 (n_dims of them with mode 24). Without mode the
        pair layout is chosen when rotating: ggml's GGML_ROPE_TYPE_NEOX is layout="neox", its
        normal mode layout="gptj".

        mode: ggml's rope mode (0 NORMAL, 2 NEOX, 8 MROPE, 24 VISION, 40 IMROPE;
        posenc_rope_plan_create_ggml_mode), which the plan then carries: rope() and the rest
        take its layout by default, mrope() / mrope_out() / mrope_factors() its interleaving
        and ggml's four-row rule, and plan.ggml holds them ({"mode", "layout",
        "interleaved", "ggml", "sections"}). sections: ggml's four M-RoPE sections (GGUF's
        rope.dimension_sections), required with modes 8, 24 and 40 and refused otherwise.
        Mode 24 (vision encoders) rotates R = 2 n_dims with per-section frequencies; a plan
        of an M-RoPE mode is refused by the one-position forms (rope(), rope_out(), ...)."""
        c = _lib.RopeGgmlParams(
            n_dims=_size("n_dims", n_dims), freq_base=_float("freq_base", freq_base),
            freq_scale=_float("freq_scale", freq_scale),
            ext_factor=_float("ext_factor", ext_factor),
            attn_factor=_float("attn_factor", attn_factor),
            beta_fast=_float("beta_fast", beta_fast), beta_slow=_float("beta_slow", beta_slow),
            n_ctx_orig=_size("n_ctx_orig", n_ctx_orig))
        mrope_mode = mode is not None and _ggml_mode_int(mode) in (8, 24, 40)
        if mode is not None:
            c.mode = _ggml_mode_int(mode)
        if sections is not None:
            if not mrope_mode:
                raise ValueError("sections are ggml's M-RoPE sections: they need mode 8, 24 or 40")
            sec = [int(x) for x in sections]
            if len(sec) != 4 or min(sec) < 0 or max(sec) >= 2**31:
                raise ValueError(f"sections must be four pair counts >= 0, got {sections!r}")
            c.sections = (ctypes.c_int * 4)(*sec)
        elif mrope_mode:
            raise ValueError(f"mode {mode} (M-RoPE) needs ggml's four sections")
        factors = None
        if freq_factors is not None:  # the C function reads R / 2 of them
            n = c.n_dims if c.mode == 24 else c.n_dims // 2
            factors = _real_vector("freq_factors", freq_factors, np.float32, n)
            c.freq_factors = _address(factors)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        if mode is None:
            plan._adopt(lib.posenc_rope_plan_create_ggml, "posenc_rope_plan_create_ggml",
                        ctypes.byref(c))
            return plan
        flags = ctypes.c_uint(0)
        plan._adopt(lib.posenc_rope_plan_create_ggml_mode, "posenc_rope_plan_create_ggml_mode",
                    ctypes.byref(c), ctypes.byref(flags))
        plan.ggml = {"mode": c.mode, **_ggml_kwargs(flags.value),
                     "sections": tuple(c.sections) if mrope_mode else None}
        plan.ggml.setdefault("interleaved", False)
        plan.ggml.setdefault("ggml", False)
        return plan

    @property
    def rotary_dim(self):
        """R, the number of rotated elements of each head vector (posenc_rope_plan_rotary_dim)."""
        return lib.posenc_rope_plan_rotary_dim(self._ptr())

    @property
    def attention_factor(self):
        """The factor on cos and sin (posenc_rope_plan_attention_factor)."""
        return lib.posenc_rope_plan_attention_factor(self._ptr())

    @property
    def freqs(self):
        """A new float64 array of the R/2 frequencies (posenc_rope_plan_freqs)."""
        out = np.empty(self.rotary_dim // 2, np.float64)
        _check(lib.posenc_rope_plan_freqs(self._ptr(), _address(out)), "posenc_rope_plan_freqs")
        return out

    def __repr__(self):
        if self._handle is None:
            return "RopePlan(<closed>)"
        return f"RopePlan(rotary_dim={self.rotary_dim}, attention_factor={self.attention_factor})"


def plan_from_ggml(n_dims, freq_base, *, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
                   beta_fast=32.0, beta_slow=1.0, n_ctx_orig=0, freq_factors=None, mode=None,
                   sections=None):
    """RopePlan.from_ggml: the plan of llama.cpp / ggml's rope arguments
    (posenc_rope_plan_create_ggml)."""
    return RopePlan.from_ggml(n_dims, freq_base, freq_scale=freq_scale, ext_factor=ext_factor,
                              attn_factor=attn_factor, beta_fast=beta_fast, beta_slow=beta_slow,
                              n_ctx_orig=n_ctx_orig, freq_factors=freq_factors, mode=mode,
                              sections=sections)


def ggml_rope_mode(mode):
    """The keyword arguments of rope() / mrope() that rotate as ggml's rope `mode` does
    (posenc_rope_ggml_flags; ggml's mode numbers are not posenc's flags): 0 (NORMAL)
    {"layout": "gptj"}, 2 (NEOX) {"layout": "neox"}, 8 (MROPE) and 24 (VISION, with a plan
    of that mode) {"layout": "neox", "ggml": True} for mrope(), 40 (IMROPE) {"layout":
    "neox", "interleaved": True, "ggml": True} for mrope(). Modes ggml does not define raise
    PosencError."""
    flags = ctypes.c_uint(0)
    _check(lib.posenc_rope_ggml_flags(_ggml_mode_int(mode), ctypes.byref(flags)),
           "posenc_rope_ggml_flags")
    return _ggml_kwargs(flags.value)


def _ggml_mode_int(mode):
    if isinstance(mode, bool) or not isinstance(mode, (int, np.integer)):
        raise TypeError(f"mode must be an integer, not {type(mode).__name__}")
    if not -2**31 <= int(mode) < 2**31:
        raise ValueError(f"mode = {mode} is outside int")
    return int(mode)


def _ggml_kwargs(flags):
    """The keyword arguments of posenc_rope_ggml_flags' flags."""
    kwargs = {"layout": "gptj" if flags & _lib.ROPE_GPTJ else "neox"}
    if flags & _lib.ROPE_MROPE_INTERLEAVED:
        kwargs["interleaved"] = True
    if flags & _lib.ROPE_MROPE_GGML:
        kwargs["ggml"] = True
    return kwargs


def _resolve(plan, positions, start_pos, n_tokens):
    """The RopePlan whose frequencies a call at these positions uses: the plan itself, or for
    a sequence-dependent HF plan (from_hf_config: "dynamic", "longrope") the one for the
    call's largest position + 1, as HF derives it from position_ids each forward."""
    _plan_handle(plan, RopePlan)
    hf = getattr(plan, "hf", None)
    if hf is None or not hf.seq_dependent:
        return plan
    if positions is not None:
        top = int(np.max(positions)) if np.size(positions) else 0
        if top > np.iinfo(np.int32).max:
            return plan  # int64 positions past int32: the library refuses the call
    else:
        top = start_pos + max(n_tokens, 1) - 1
    from . import _hfconfig
    return _hfconfig.resolve_plan(plan, top)
