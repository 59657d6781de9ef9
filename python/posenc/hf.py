"""posenc.hf: HuggingFace transformers models on posenc's RoPE kernels.

This module (and only this module of posenc) imports torch; transformers is imported when a
function needs it (RotaryEmbedding's compat mode, patch()). It provides:

- RotaryEmbedding(config, mode="accurate" | "compat", hf_module=None): a torch.nn.Module that
  replaces a model's rotary module (LlamaRotaryEmbedding, Qwen2RotaryEmbedding,
  Phi3RotaryEmbedding, Qwen2VLRotaryEmbedding). forward(x, position_ids) returns (cos, sin)
  as HF's module does, computed by posenc, and carries posenc's rotation factors alongside
  them, so that the attention's apply function below rotates q and k with posenc's kernel
  (cos/sin computed once per forward, applied to q and k of every layer).
- apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1) and
  apply_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section, unsqueeze_dim=1): HF's
  functions, same signatures and results. With cos/sin from a RotaryEmbedding they rotate
  with posenc (posenc.rope_apply); with any other cos/sin they compute HF's formula.
- patch(model, mode="accurate"), unpatch(model), patched(model, mode) (a context manager),
  patch_mode(model): switch a loaded LlamaForCausalLM, Qwen2ForCausalLM, Phi3ForCausalLM,
  Qwen2VLForConditionalGeneration, MistralForCausalLM, GemmaForCausalLM, Gemma2ForCausalLM
  or Olmo2ForCausalLM (or their base models) to posenc and back.

Modes:
  "compat": the frequencies are HF's own float32 inv_freq (read from the HF module being
      replaced, else from transformers' ROPE_INIT_FUNCTIONS) and each angle is
      (float)position * inv_freq rounded to float32, as HF computes it
      (posenc.RopePlan.from_freqs_f32, f32_angles=True): logits match HF's within float32
      rounding. Dynamic and LongRoPE frequencies change with the positions of each call as
      HF's modules change them (HF's float32 recomputation, the same state).
  "accurate": posenc.RopePlan.from_hf_config(config, transformers=<the installed version>):
      the config read as the installed transformers' modules read it (4.x and 5.x differ on
      some yarn, longrope and llama3 configs), double frequencies and angles exact to
      2^-22 at every position (HF's float32 angle is off by up to a few 1e-3 rad at position
      40000). Dynamic and LongRoPE frequencies follow the largest position of each call.

Limits: CPU tensors only (posenc is a CPU library); q and k of float32, bfloat16 or float16
(other dtypes, other devices and cos/sin not made here take HF's formula). Gradients flow:
the backward pass is posenc's inverse rotation with the same factors.
"""

import ctypes

import numpy as np
import torch

from . import RopePlan, _lib, mrope_factors, rope_apply, rope_factors
from ._core import _INT32_MAX, _INT32_MIN, _check
from ._factors import RopeFactors
from ._hfconfig import resolve_plan as _resolve_plan
from ._rope import _rope_flags

__all__ = [
    "RotaryEmbedding", "apply_rotary_pos_emb", "apply_multimodal_rotary_pos_emb", "patch",
    "unpatch", "patched", "patch_mode", "SUPPORTED_MODEL_TYPES", "MODES",
]

MODES = ("accurate", "compat")

_KERNEL_DTYPES = (torch.float32, torch.bfloat16, torch.float16)

def _check_mode(mode):
    if mode not in MODES:
        raise ValueError(f"mode must be 'accurate' or 'compat', not {mode!r}")
    return mode


# --- the factors carried with cos and sin -------------------------------------------------

class _Rotation:
    """What RotaryEmbedding.forward attaches to the cos and sin it returns (as the attribute
    _posenc_rotation of both tensors): the posenc factors of its positions, the [B, L] they
    cover and, for M-RoPE, the sections; the tensors' versions, so that cos/sin changed in
    place afterwards are not taken for posenc's."""

    __slots__ = ("factors", "n_batch", "n_tokens", "rotary_dim", "sections", "cos_version",
                 "sin_version")

    def __init__(self, factors, n_batch, n_tokens, rotary_dim, sections):
        self.factors = factors
        self.n_batch = n_batch
        self.n_tokens = n_tokens
        self.rotary_dim = rotary_dim
        self.sections = sections
        self.cos_version = self.sin_version = None

    def __deepcopy__(self, memo):
        return self  # read-only once attached: a copied cos/sin may share it

    def __copy__(self):
        return self

    def __reduce__(self):
        return (_no_rotation, ())  # not picklable (C memory): a pickled cos/sin drops it

    def attach(self, cos, sin):
        cos._posenc_rotation = self
        sin._posenc_rotation = self
        self.cos_version = cos._version
        self.sin_version = sin._version


def _no_rotation():
    return None


def _rotation_of(cos, sin):
    """The _Rotation that cos and sin carry, or None if they are not both posenc's own
    unchanged tensors."""
    rotation = getattr(cos, "_posenc_rotation", None)
    if (rotation is None or getattr(sin, "_posenc_rotation", None) is not rotation
            or cos._version != rotation.cos_version or sin._version != rotation.sin_version):
        return None
    return rotation


class _RopeApply(torch.autograd.Function):
    """posenc.rope_apply as an autograd function: the gradient of y = att * R(a) x is
    att * R(-a) g, the inverse rotation (POSENC_ROPE_INVERSE) with the same factors
    (elements past rotary_dim are copied, so their gradient passes unchanged)."""

    @staticmethod
    def forward(ctx, x, factors, axes, row_batch_stride):
        ctx.posenc_args = (factors, axes, row_batch_stride)
        return rope_apply(factors, x.detach(), axes=axes, row_batch_stride=row_batch_stride)

    @staticmethod
    def backward(ctx, grad):
        factors, axes, row_batch_stride = ctx.posenc_args
        if grad.stride(-1) != 1:
            grad = grad.contiguous()
        out = rope_apply(factors, grad, axes=axes, row_batch_stride=row_batch_stride,
                         inverse=True)
        return out, None, None, None


_DTYPE_CODES = {torch.float32: _lib.DTYPE_F32, torch.bfloat16: _lib.DTYPE_BF16,
                torch.float16: _lib.DTYPE_F16}
# (batch, head, token) axis of each axis order the attention passes
_AXIS_INDEX = {"BHLD": (0, 1, 2), "BLHD": (0, 2, 1)}
_C_APPLY = _lib.lib.posenc_rope_apply
_C_FACTORS = _lib.lib.posenc_rope_factors_compute
_C_FACTORS_BYTES = _lib.lib.posenc_rope_factors_bytes


def _view_of(x, shape, strides, index):
    """The posenc_rope_view of a 4-D CPU tensor of this shape and these strides, whose
    (batch, head, token) axes `index` gives, with the strides of its length-1 axes replaced
    by C-order ones (never used), as the generic binding does."""
    strides = list(strides)
    inner = 1
    for axis in (3, 2, 1, 0):
        if shape[axis] == 1:
            strides[axis] = inner
        inner = strides[axis] * shape[axis]
    b, h, t = index
    return _lib.RopeView(x.data_ptr(), _DTYPE_CODES[x.dtype], shape[h], strides[t], strides[h],
                         strides[b])


def _apply_direct(factors, x, axes, row_batch_stride, dst=None):
    """posenc.rope_apply(factors, x, axes=axes, row_batch_stride=row_batch_stride), bitwise
    the same C call, on a 4-D CPU tensor of a kernel dtype: the attention's per-layer path,
    without the generic binding's conversions (they cost more than the kernel itself when
    decoding one token). dst: None for a new tensor of x's shape and dtype, or a CPU tensor
    of x's shape whose dtype the C library accepts for x's. Anything unusual (an empty
    tensor, a last axis that is not contiguous) takes the generic binding."""
    shape, strides = x.shape, x.stride()
    if shape[3] > 1 and strides[3] != 1 or x.numel() == 0 or \
            (dst is not None and dst.shape[3] > 1 and dst.stride(3) != 1):
        return rope_apply(factors, x, dst=dst, axes=axes, row_batch_stride=row_batch_stride)
    if dst is None:
        dst = torch.empty(shape, dtype=x.dtype)
    index = _AXIS_INDEX[axes]
    struct = factors._struct
    status = _C_APPLY(ctypes.byref(struct), 0, row_batch_stride, shape[3], shape[index[0]],
                      shape[index[2]], ctypes.byref(_view_of(x, shape, strides, index)),
                      ctypes.byref(_view_of(dst, dst.shape, dst.stride(), index)),
                      struct.flags)
    if status != _lib.POSENC_OK:
        _check(status, "posenc_rope_apply")
    return dst


def _rotate(rotation, x, axes):
    """x rotated by the rotation's factors with posenc: a new tensor of x's shape and dtype."""
    stride = 0 if rotation.n_batch == 1 else rotation.n_tokens
    if x.requires_grad and torch.is_grad_enabled():
        return _RopeApply.apply(x, rotation.factors, axes, stride)
    return _apply_direct(rotation.factors, x, axes, stride)


_UNSQUEEZE_AXES = {1: "BHLD", 2: "BLHD"}  # the axis order of q and k by unsqueeze_dim


def _kernel_axes(rotation, q, k, unsqueeze_dim):
    """The axis order of q and k if posenc can rotate them with this rotation, else None."""
    if rotation is None or q.dim() != 4 or k.dim() != 4:
        return None
    dim = unsqueeze_dim + 4 if -4 <= unsqueeze_dim < 0 else unsqueeze_dim
    axes = _UNSQUEEZE_AXES.get(dim)
    if axes is None:
        return None
    token_axis = 2 if dim == 1 else 1
    for x in (q, k):
        if (x.dtype not in _KERNEL_DTYPES or not x.is_cpu
                or x.shape[token_axis] != rotation.n_tokens
                or x.shape[-1] < rotation.rotary_dim
                or rotation.n_batch not in (1, x.shape[0])):
            return None
    return axes


# --- the apply functions ------------------------------------------------------------------

def _rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _hf_rope(q, k, cos, sin, unsqueeze_dim):
    """HF's formula (Phi-3's form: a cos narrower than the head rotates its first
    cos.shape[-1] elements; with cos as wide as the head it is Llama's, bit for bit)."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    rotary_dim = cos.shape[-1]
    if rotary_dim == q.shape[-1] and rotary_dim == k.shape[-1]:
        return (q * cos) + (_rotate_half(q) * sin), (k * cos) + (_rotate_half(k) * sin)
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = torch.cat([(q_rot * cos) + (_rotate_half(q_rot) * sin), q_pass], dim=-1)
    k_embed = torch.cat([(k_rot * cos) + (_rotate_half(k_rot) * sin), k_pass], dim=-1)
    return q_embed, k_embed


def _hf_mrope(q, k, cos, sin, mrope_section, unsqueeze_dim):
    """HF's apply_multimodal_rotary_pos_emb (Qwen2-VL): mrope_section counts pairs; each
    section of the doubled list takes its cos/sin from row i % 3 of cos/sin (3, B, L, D)."""
    mrope_section = list(mrope_section) * 2
    cos = torch.cat([m[i % 3] for i, m in enumerate(cos.split(mrope_section, dim=-1))],
                    dim=-1).unsqueeze(unsqueeze_dim)
    sin = torch.cat([m[i % 3] for i, m in enumerate(sin.split(mrope_section, dim=-1))],
                    dim=-1).unsqueeze(unsqueeze_dim)
    return (q * cos) + (_rotate_half(q) * sin), (k * cos) + (_rotate_half(k) * sin)


def _posenc_rope(q, k, cos, sin, unsqueeze_dim):
    """(q, k) rotated by posenc if cos/sin carry plain-RoPE factors that fit them, else None."""
    rotation = _rotation_of(cos, sin)
    if rotation is None or rotation.sections is not None:
        return None
    axes = _kernel_axes(rotation, q, k, unsqueeze_dim)
    if axes is None:
        return None
    return _rotate(rotation, q, axes), _rotate(rotation, k, axes)


def _posenc_mrope(q, k, cos, sin, mrope_section, unsqueeze_dim):
    """(q, k) rotated by posenc if cos/sin carry M-RoPE factors of these sections, else None."""
    rotation = _rotation_of(cos, sin)
    if rotation is None or rotation.sections is None:
        return None
    try:
        sections = tuple(int(s) for s in mrope_section)
    except (TypeError, ValueError):
        return None
    if sections != rotation.sections:
        return None
    axes = _kernel_axes(rotation, q, k, unsqueeze_dim)
    if axes is None:
        return None
    return _rotate(rotation, q, axes), _rotate(rotation, k, axes)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """HF's apply_rotary_pos_emb, backed by posenc: returns (q_embed, k_embed).

    q, k: [B, H, L, D] (unsqueeze_dim=1, as HF's attention passes them: views
    q_proj(x).view(B, L, H, D).transpose(1, 2); k may have fewer heads) or [B, L, H, D]
    (unsqueeze_dim=2). cos, sin: [B, L, R] (R <= D; R < D rotates the first R elements of
    each head and keeps the rest, as Phi-3's form of this function does). position_ids:
    unused (HF keeps it for compatibility).

    When cos and sin are the unchanged tensors a RotaryEmbedding returned, q and k are
    rotated by posenc (posenc.rope_apply with the factors that came with them: one pass,
    rounded once to q's dtype; float32, bfloat16, float16 CPU tensors); the result is new
    contiguous tensors of q's and k's shapes and dtypes. Otherwise (any other cos/sin, or
    tensors posenc does not take) it is HF's formula,
        q * cos + rotate_half(q) * sin,  k * cos + rotate_half(k) * sin.
    """
    out = _posenc_rope(q, k, cos, sin, unsqueeze_dim)
    return out if out is not None else _hf_rope(q, k, cos, sin, unsqueeze_dim)


def apply_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    """HF's apply_multimodal_rotary_pos_emb (Qwen2-VL's M-RoPE), backed by posenc: returns
    (q_embed, k_embed).

    q, k: as for apply_rotary_pos_emb. cos, sin: (3, B, L, D), one table per position row
    (temporal, height, width). mrope_section: three pair counts summing to D / 2 (the
    config's rope_scaling["mrope_section"]); HF doubles the list to cover both halves of the
    rotate-half layout, so pair i takes its angle from the row of the section it falls in,
    which is posenc's `sections` as they are (posenc.mrope_factors). With cos/sin from a
    RotaryEmbedding made for these sections, posenc rotates; otherwise HF's formula.
    """
    out = _posenc_mrope(q, k, cos, sin, mrope_section, unsqueeze_dim)
    return out if out is not None else _hf_mrope(q, k, cos, sin, mrope_section, unsqueeze_dim)


# --- the rotary module --------------------------------------------------------------------

def _rope_type(config):
    scaling = getattr(config, "rope_scaling", None) or {}
    return scaling.get("rope_type", scaling.get("type")) or "default"


def _mrope_sections(config):
    scaling = getattr(config, "rope_scaling", None) or {}
    sections = scaling.get("mrope_section")
    return None if sections is None else tuple(int(s) for s in sections)


class _HFFrequencies:
    """HF's float32 inv_freq and attention scaling as HF's rotary module holds and updates
    them (compat mode): fixed for most types; "dynamic" recomputed when a call's positions
    grow past the cached length and reset below the original one; "longrope" switched
    between the short and the long factors at original_max_position_embeddings where the
    replaced module does so (Phi-3's has _longrope_frequency_update; Llama's module of
    transformers 4.49 keeps the short factors), and always when no module is given."""

    def __init__(self, config, hf_module):
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

        self.config = config
        self.rope_type = _rope_type(config)
        self.init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
        if hf_module is not None and getattr(hf_module, "inv_freq", None) is not None:
            self.inv_freq = self._f32(hf_module.inv_freq)
            original = getattr(hf_module, "original_inv_freq", None)
            self.original_inv_freq = self._f32(original) if original is not None else self.inv_freq
            self.attention_scaling = float(getattr(hf_module, "attention_scaling", 1.0))
            self.max_seq_len_cached = getattr(hf_module, "max_seq_len_cached",
                                              config.max_position_embeddings)
            self.original_max_seq_len = getattr(hf_module, "original_max_seq_len",
                                                config.max_position_embeddings)
        else:
            inv_freq, scaling = self.init_fn(config, None)
            self.inv_freq = self.original_inv_freq = self._f32(inv_freq)
            self.attention_scaling = float(scaling)
            self.max_seq_len_cached = self.original_max_seq_len = config.max_position_embeddings
        self.long_inv_freq = None
        self.switch_longrope = hf_module is None or hasattr(hf_module,
                                                            "_longrope_frequency_update")

    @staticmethod
    def _f32(tensor):
        return tensor.detach().to("cpu", torch.float32).contiguous()

    def update(self, position_ids):
        """Follows HF's frequency update for a call with these positions."""
        if "dynamic" in self.rope_type:
            seq_len = torch.max(position_ids) + 1
            if seq_len > self.max_seq_len_cached:
                inv_freq, scaling = self.init_fn(self.config, None, seq_len=seq_len)
                self.inv_freq, self.attention_scaling = self._f32(inv_freq), float(scaling)
                self.max_seq_len_cached = seq_len
            if (seq_len < self.original_max_seq_len
                    and self.max_seq_len_cached > self.original_max_seq_len):
                self.inv_freq = self.original_inv_freq
                self.max_seq_len_cached = self.original_max_seq_len
        elif self.rope_type == "longrope" and self.switch_longrope:
            seq_len = torch.max(position_ids) + 1
            original = getattr(self.config, "original_max_position_embeddings",
                               self.config.max_position_embeddings)
            if seq_len > original:
                if self.long_inv_freq is None:
                    self.long_inv_freq = self._f32(
                        self.init_fn(self.config, None, seq_len=original + 1)[0])
                self.inv_freq = self.long_inv_freq
            else:
                self.inv_freq = self.original_inv_freq


def _accurate_plan(config):
    """The accurate mode's plan: the config read as the installed transformers reads it (the
    model's own modules are that version's), named explicitly: no HfReadingWarning."""
    from ._hfconfig import installed_transformers
    return RopePlan.from_hf_config(config, transformers=installed_transformers() or "5")


# forward()'s direct path: positions of these dtypes; up to _LIST_POSITIONS of them read
# with tolist() into a ctypes array (cheaper than NumPy's conversions for a few), more as a
# NumPy view
_DIRECT_POSITION_DTYPES = (torch.int64, torch.int32)
_LIST_POSITIONS = 256
# posenc_rope_factors_bytes by (rotary_dim, n_rows, layout flag)
_FACTOR_BYTES = {}


def _aligned_storage(nbytes, alignment=64):
    """_aligned_float32(nbytes) (a float32 array of nbytes bytes, a multiple of 4, starting
    on a cache line) and its address."""
    raw = np.empty((nbytes + alignment) // 4, np.float32)
    address = raw.ctypes.data
    offset = -address % alignment  # a multiple of 4: NumPy aligns its data to at least that
    start = offset // 4
    return raw[start:start + nbytes // 4], address + offset


class RotaryEmbedding(torch.nn.Module):
    """A rotary-embedding module computed by posenc, in place of a HF model's own
    (LlamaRotaryEmbedding and the like; Qwen2VLRotaryEmbedding for M-RoPE configs).

    RotaryEmbedding(config, mode="accurate", hf_module=None)
      config: the model's (text) config: rope_theta, head_dim (or hidden_size /
          num_attention_heads), partial_rotary_factor, rope_scaling (its "mrope_section"
          makes this an M-RoPE module), max_position_embeddings,
          original_max_position_embeddings.
      mode: "accurate" (posenc.RopePlan.from_hf_config: double frequencies, exact angles)
          or "compat" (HF's float32 inv_freq and float32 angles, via
          posenc.RopePlan.from_freqs_f32 and f32_angles=True).
      hf_module: in compat mode, the HF rotary module being replaced, whose inv_freq,
          attention_scaling and dynamic-update state are taken over; None computes them with
          transformers' ROPE_INIT_FUNCTIONS. Not kept (nor registered as a submodule).

    forward(x, position_ids) -> (cos, sin), as HF's module returns them: position_ids
    [B, L] (M-RoPE: (3, B, L), or [B, L] used for all three rows); cos and sin [B, L, R]
    (M-RoPE: (3, B, L, R), row j at the positions of row j) in x.dtype, the attention
    factor applied, R the rotary dimension (both contiguous, views of one new tensor
    [2, B, L, R]). Both carry posenc's rotation factors (plain
    RoPE: posenc.rope_factors of the [B, L] positions; M-RoPE: posenc.mrope_factors with the
    config's sections), which apply_rotary_pos_emb / apply_multimodal_rotary_pos_emb of
    this module use to rotate q and k of every layer without recomputing cos/sin. The cos
    and sin values are posenc's too (the factors applied to unit vectors), so HF's own
    formula on them rotates as posenc does, up to the rounding of the formula.
    x is only read for its dtype and device (CPU).
    """

    def __init__(self, config, mode="accurate", hf_module=None):
        super().__init__()
        self.config = config
        self.mode = _check_mode(mode)
        self.rope_type = _rope_type(config)
        self.sections = _mrope_sections(config)
        self._hf = None
        self._plan = None
        self._plans = {}
        # what stays from call to call: the compat plan of the latest inv_freq, the flags
        # of the latest plan, the unit vectors' views by shape (plain state: copies and
        # pickles start empty)
        self._cache = {}
        if mode == "compat":
            self._hf = _HFFrequencies(config, hf_module)
            self.rotary_dim = 2 * self._hf.inv_freq.numel()
        else:
            self._plan = _accurate_plan(config)
            self.rotary_dim = self._plan.rotary_dim
        # the unit vectors (1, 0) of every pair, which _tables rotates into cos and sin
        self._unit = torch.zeros(self.rotary_dim, dtype=torch.float32)
        self._unit[:self.rotary_dim // 2] = 1.0
        if self.sections is not None and sum(self.sections) != self.rotary_dim // 2:
            raise ValueError(f"mrope_section {list(self.sections)} must sum to rotary_dim / 2 = "
                             f"{self.rotary_dim // 2}")

    def __getstate__(self):
        # posenc plans hold C memory: not copied or pickled, rebuilt (deepcopy, pickle)
        state = self.__dict__.copy()
        state["_plan"], state["_plans"], state["_cache"] = None, {}, {}
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if self.mode == "accurate":
            self._plan = _accurate_plan(self.config)

    @property
    def attention_scaling(self):
        """The factor on cos and sin (HF's attribute of the same name; in compat mode that of
        the latest call)."""
        if self._hf is not None:
            return self._hf.attention_scaling
        return self._plan.attention_factor

    def extra_repr(self):
        sections = "" if self.sections is None else f", mrope_section={list(self.sections)}"
        return (f"mode={self.mode!r}, rope_type={self.rope_type!r}, "
                f"rotary_dim={self.rotary_dim}{sections}")

    def plan(self, position_ids=None):
        """The posenc.RopePlan a call with these positions uses (compat: built from HF's
        float32 inv_freq of that call, cached; accurate: the config's plan, whose
        sequence-dependent types the kernels resolve from each call's largest position)."""
        if self._hf is None:
            return self._plan
        if position_ids is not None:
            self._hf.update(position_ids)
        inv_freq, scaling = self._hf.inv_freq, self._hf.attention_scaling
        # the previous call's plan while inv_freq is the same unchanged tensor (HF's update
        # replaces it) and the scaling the same: no key to make from the values
        last = self._cache.get("compat")
        if (last is not None and last[0] is inv_freq and last[1] == inv_freq._version
                and last[2] == scaling):
            return last[3]
        key = (inv_freq.numpy().tobytes(), scaling)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= 8:
                self._plans.clear()
            plan = RopePlan.from_freqs_f32(inv_freq, attention_factor=scaling)
            self._plans[key] = plan
        self._cache["compat"] = (inv_freq, inv_freq._version, scaling, plan)
        return plan

    def _tables(self, factors, n_rows_batch, n_tokens, dtype):
        """cos and sin [n_rows_batch, L, R] of the factors' rows, computed by applying them
        to the unit vectors (1, 0) of every pair: u' = att cos, v' = att sin. Both are
        views of one new C-order [2, n_rows_batch, L, R] tensor."""
        rotary_dim = self.rotary_dim
        half = rotary_dim // 2
        out_dtype = dtype if dtype in _KERNEL_DTYPES else torch.float32
        srcs = self._cache.setdefault("units", {})
        src = srcs.get((n_rows_batch, n_tokens))
        if src is None:
            if len(srcs) >= 16:
                srcs.clear()
            src = self._unit.view(1, 1, 1, -1).expand(n_rows_batch, n_tokens, 1, rotary_dim)
            srcs[(n_rows_batch, n_tokens)] = src
        dst = torch.empty((n_rows_batch, n_tokens, 1, rotary_dim), dtype=out_dtype)
        _apply_direct(factors, src, "BLHD", n_tokens, dst)
        # each row of dst is [c, s]: cos = [c, c] and sin = [s, s] in one copy (a view
        # that reads each half twice, made contiguous)
        both = dst.as_strided((2, n_rows_batch * n_tokens, 2, half),
                              (half, rotary_dim, 0, 1)).contiguous()
        if out_dtype != dtype:
            both = both.to(dtype)
        both = both.view(2, n_rows_batch, n_tokens, rotary_dim)
        return both[0], both[1]

    def forward(self, x, position_ids):
        """(cos, sin) of the positions, in x.dtype, carrying posenc's factors (see the
        class)."""
        if (self.sections is None and isinstance(x, torch.Tensor) and x.is_cpu
                and isinstance(position_ids, torch.Tensor) and position_ids.is_cpu
                and position_ids.dtype in _DIRECT_POSITION_DTYPES
                and 1 <= position_ids.dim() <= 2 and position_ids.numel()):
            return self._forward_direct(x, position_ids)
        return self._forward(x, position_ids)

    def _forward_direct(self, x, position_ids):
        """forward() for int64 / int32 positions [B, L] or [L] of plain RoPE (HF's
        position_ids): the same C calls with the same arguments as _forward's rope_factors()
        and _tables(), without the generic binding's conversions (NumPy views, and dtype and
        shape checks of arguments this path already knows: at a decode step they cost more
        than the C calls). Its checks and their order are _forward's."""
        if position_ids.dim() == 2:
            n_batch, n_tokens = position_ids.shape
        else:
            n_batch, n_tokens = 1, position_ids.shape[0]
        n_rows = n_batch * n_tokens
        f32_angles = self._hf is not None
        plan = self._plan if self._hf is None else self.plan(position_ids)
        plan._ptr()  # a closed plan: ValueError, first as rope_factors() checks
        known = self._cache.get("plan")
        if known is None or known[0] is not plan:
            hf = getattr(plan, "hf", None)
            known = (plan, _rope_flags(None, f32_angles=f32_angles, plan=plan),
                     plan.rotary_dim, hf is not None and hf.seq_dependent)
            self._cache["plan"] = known
        _, flags, rotary_dim, seq_dependent = known
        if n_rows <= _LIST_POSITIONS:
            flat = position_ids.tolist()
            if position_ids.dim() == 2:
                flat = flat[0] if n_batch == 1 else [p for row in flat for p in row]
            low, top = min(flat), max(flat)
            pos = (ctypes.c_int32 * n_rows)(*flat) if _INT32_MIN <= low and \
                top <= _INT32_MAX else None
        else:
            # int64 positions as they are (POSENC_ROPE_POSITIONS_INT64: no int32 copy)
            flat = np.ascontiguousarray(position_ids.numpy().reshape(-1))
            low, top = int(flat.min()), int(flat.max())
            pos = flat if _INT32_MIN <= low and top <= _INT32_MAX else None
            if flat.dtype == np.int64:
                flags |= _lib.ROPE_POSITIONS_INT64
        if pos is None:
            return self._forward(x, position_ids)  # its refusal (the library's detail)
        plan_used = _resolve_plan(plan, top) if seq_dependent else plan
        handle = plan_used._ptr()
        key = (rotary_dim, n_rows, flags & _lib.ROPE_GPTJ)
        nbytes = _FACTOR_BYTES.get(key)
        if nbytes is None:
            nbytes = _C_FACTORS_BYTES(*key)
            if nbytes == 0:
                raise ValueError(f"{n_rows} rows of factors for rotary_dim {rotary_dim} "
                                 "overflow size_t")
            if len(_FACTOR_BYTES) >= 256:
                _FACTOR_BYTES.clear()
            _FACTOR_BYTES[key] = nbytes
        storage, address = _aligned_storage(nbytes)
        struct = _lib.RopeFactors()
        status = _C_FACTORS(handle, n_rows, pos if n_rows <= _LIST_POSITIONS else
                            pos.ctypes.data, 0, flags, address, nbytes, ctypes.byref(struct))
        if status != _lib.POSENC_OK:
            _check(status, "posenc_rope_factors_compute")
        factors = RopeFactors._make(struct, storage, f32_angles)
        cos, sin = self._tables(factors, n_batch, n_tokens, x.dtype)
        _Rotation(factors, n_batch, n_tokens, rotary_dim, None).attach(cos, sin)
        return cos, sin

    @torch.no_grad()
    def _forward(self, x, position_ids):
        """forward() through the generic bindings (rope_factors, mrope_factors): every
        case."""
        if x.device.type != "cpu" or position_ids.device.type != "cpu":
            raise ValueError("posenc.hf.RotaryEmbedding runs on CPU tensors only, got "
                             f"x on {x.device} and position_ids on {position_ids.device}")
        positions = position_ids.detach()
        f32_angles = self.mode == "compat"
        if self.sections is None:
            if positions.dim() == 1:
                positions = positions[None]
            if positions.dim() != 2:
                raise ValueError(f"position_ids must be [B, L], got {tuple(positions.shape)}")
            n_batch, n_tokens = positions.shape
            plan = self.plan(positions)
            factors = rope_factors(plan, positions=positions, f32_angles=f32_angles)
            cos, sin = self._tables(factors, n_batch, n_tokens, x.dtype)
            rotation = _Rotation(factors, n_batch, n_tokens, self.rotary_dim, None)
        else:
            if positions.dim() == 2:
                positions = positions[None].expand(3, -1, -1)
            if positions.dim() != 3 or positions.shape[0] != 3:
                raise ValueError(f"position_ids must be (3, B, L) for M-RoPE, got "
                                 f"{tuple(positions.shape)}")
            _, n_batch, n_tokens = positions.shape
            plan = self.plan(positions)
            rows = rope_factors(plan, positions=positions.reshape(3 * n_batch, n_tokens),
                                f32_angles=f32_angles)
            cos, sin = self._tables(rows, 3 * n_batch, n_tokens, x.dtype)
            cos = cos.view(3, n_batch, n_tokens, self.rotary_dim)
            sin = sin.view(3, n_batch, n_tokens, self.rotary_dim)
            factors = mrope_factors(plan, self.sections, positions=positions,
                                    f32_angles=f32_angles)
            rotation = _Rotation(factors, n_batch, n_tokens, self.rotary_dim, self.sections)
        rotation.attach(cos, sin)
        return cos, sin


# patch / unpatch (python/posenc/_hfpatch.py), after the names it uses are defined
from ._hfpatch import (SUPPORTED_MODEL_TYPES, patch, patch_mode, patched,  # noqa: E402
                       unpatch)
