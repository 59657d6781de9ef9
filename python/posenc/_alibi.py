"""ALiBi: slopes, the bias, and the bias added into (or softmaxed with) scores."""

import numpy as np

from . import _lib
from ._lib import lib
from ._core import _address, _c_function, _check, _data, _float, _new_or_given, _real_vector, _size


def alibi_slopes(n_heads, *, max_bias=8.0, ggml=False):
    """A new float32 array of the n_heads ALiBi slopes (posenc_alibi_slopes; seed 000's
    _get_slopes with max_bias for its 8). n_heads >= 1; max_bias finite, > 0. ggml=True: the
    slopes as ggml computes them, bit for bit (posenc_alibi_slopes_ggml: float powf steps;
    max_bias >= 0, 0 giving slopes of 1 as ggml's models without ALiBi)."""
    n_heads = _size("n_heads", n_heads)
    out = np.empty(n_heads, np.float32)
    max_bias = _float("max_bias", max_bias)
    if ggml:
        _check(lib.posenc_alibi_slopes_ggml(n_heads, max_bias, _address(out)),
               "posenc_alibi_slopes_ggml")
    else:
        _check(lib.posenc_alibi_slopes(n_heads, max_bias, _address(out)), "posenc_alibi_slopes")
    return out


def _alibi_flags(causal):
    return _lib.ALIBI_CAUSAL if causal else 0


def _scores(name, scores, dtype, types=None):
    """(posenc_dtype, head stride, row stride) of a writeable [H, n_q, n_k] score view."""
    code, (head_stride, row_stride, _) = _data(name, scores, 3, True, dtype, types)
    return code, head_stride, row_stride


def _alibi_in_place(stem, scores, slopes, q_offset, scale, causal, dtype, types=None):
    """<stem>_<type>(slopes, H, n_q, n_k, q_offset, scores, strides, scale, flags) on a
    writeable [H, n_q, n_k] score view: alibi_add and alibi_softmax."""
    code, head_stride, row_stride = _scores("scores", scores, dtype, types)
    n_heads, n_q, n_k = scores.shape
    slopes = _real_vector("slopes", slopes, np.float32, n_heads)
    function, name = _c_function(stem, code)
    _check(function(_address(slopes), n_heads, n_q, n_k, _size("q_offset", q_offset),
                    _address(scores), head_stride, row_stride, _float("scale", scale),
                    _alibi_flags(causal)),
           name)


def alibi_add(scores, slopes, *, q_offset=0, scale=1.0, causal=False, dtype=None):
    """Adds the ALiBi bias into attention scores in place: posenc_alibi_add_f32, _bf16 or
    _f16 by the scores' storage type.

    scores: a writeable view [H, n_q, n_k] (rows may be strided; [n_q, H, n_k] storage as
    s.transpose(1, 0, 2)) of float32, float16 or bfloat16 (uint16 bits: bfloat16 unless
    dtype="float16"). Query row i is at position q_offset + i, key j at j:
        S = scale * S - slope_h * |q_offset + i - j|,  -inf where j > q_offset + i if causal.
    16-bit scores are widened exactly and the float result rounded once to their type.
    slopes: H real numbers, used as float32. Returns None.
    """
    _alibi_in_place("posenc_alibi_add", scores, slopes, q_offset, scale, causal, dtype)


def alibi_bias(slopes, n_q, n_k, *, q_offset=0, causal=False, out=None, dtype=None):
    """The ALiBi bias itself, -(slope_h * |q_offset + i - j|) (-inf above the diagonal if
    causal): posenc_alibi_bias_f32, _bf16 or _f16. Seed 000's get_bias(L)[0] is
    alibi_bias(slopes, L, L), bit for bit. out: None for a new [H, n_q, n_k] array of type
    dtype (default float32; bfloat16 as uint16 bits), or a writeable view of that shape in
    one of the storage types. Returns out."""
    slopes = _real_vector("slopes", slopes, np.float32)
    n_heads, n_q, n_k = slopes.shape[0], _size("n_q", n_q), _size("n_k", n_k)
    out = _new_or_given(out, (n_heads, n_q, n_k), dtype)
    code, head_stride, row_stride = _scores("out", out, dtype)
    if out.shape != (n_heads, n_q, n_k):
        raise ValueError(f"out must have shape {(n_heads, n_q, n_k)}, got {out.shape}")
    function, name = _c_function("posenc_alibi_bias", code)
    _check(function(_address(slopes), n_heads, n_q, n_k, _size("q_offset", q_offset),
                    _address(out), head_stride, row_stride, _alibi_flags(causal)),
           name)
    return out


def alibi_softmax(scores, slopes, *, q_offset=0, scale=1.0, causal=False, dtype=None):
    """The fused row kernel of an ALiBi attention layer, in place: posenc_alibi_softmax_f32
    or _bf16 by the scores' storage type (float32, or bfloat16: an ml_dtypes-style array,
    a torch tensor or uint16 bits). Each row becomes the attention probabilities of
    x_j = scale * S_j - slope_h * |q_offset + i - j| (bit for bit alibi_add's value) over
    its visible keys (all, or j <= q_offset + i if causal; hidden keys get +0): exactly
    softmax(scores, out=scores, scale=scale, slopes=slopes, q_offset=q_offset,
    causal=causal, alibi="symmetric"). scores, slopes: as for alibi_add. Returns None.
    """
    _alibi_in_place("posenc_alibi_softmax", scores, slopes, q_offset, scale, causal, dtype,
                    (_lib.DTYPE_F32, _lib.DTYPE_BF16))
