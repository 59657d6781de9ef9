"""The fused attention-score softmax (posenc_softmax)."""

import ctypes

import numpy as np

from . import _lib
from ._lib import lib
from ._core import (_NUMPY_STORAGE, _address, _array_type, _check, _element_strides, _float, _int32,
                    _is_bfloat16, _named_positions, _real_vector, _storage_type)


_ALIBI_FORMS = {"signed": 0, "symmetric": _lib.SOFTMAX_ALIBI_SYMMETRIC,
                "mask_slope": _lib.SOFTMAX_MASK_SLOPE}


def _scores_view(name, array, code, source):
    """The posenc_scores_view of a [H, n_q, n_k] or [n_q, n_k] (one head) array. A source may
    repeat heads (a zero head stride), not rows: the C row stride 0 means n_k."""
    if array.ndim not in (2, 3):
        raise ValueError(f"{name} must be 3-D [heads, queries, keys] or 2-D [queries, keys], "
                         f"got shape {array.shape}")
    strides = _element_strides(name, array, source)
    if array.ndim == 2:
        strides = [strides[0] * array.shape[0]] + strides  # one head: never used
    if array.size and array.shape[-2] > 1 and strides[-2] == 0:
        raise ValueError(f"{name}: a zero (broadcast) stride on the query axis is not supported "
                         "(posenc's row stride 0 means n_k); pass a copy")
    return _lib.ScoresView(_address(array), code, strides[0], strides[1])


def _softmax_mask(mask, n_heads, n_q, n_k):
    """(array kept alive, posenc_dtype, row stride, head stride) of a mask broadcast to
    [n_q, n_k] (shared by the heads) or, given 3-D, [H, n_q, n_k]. float32 and float16 are
    used as they are (copied only where their strides do not fit the C layout: keys
    contiguous, rows at least n_k apart); a boolean mask is True = attend (0.0, else -inf),
    as PyTorch's scaled_dot_product_attention reads it; other real types become float32."""
    array = np.asarray(mask)
    if array.dtype == np.bool_:
        array = np.where(array, np.float32(0.0), np.float32(-np.inf))
    elif array.dtype == np.uint16:
        raise TypeError("mask must be float32 or float16 (or bool, or another real type, "
                        "converted to float32), not uint16")
    elif array.dtype not in (np.float32, np.float16):
        if array.dtype.kind not in "iuf" and not _is_bfloat16(array.dtype):
            raise TypeError(f"mask must be real numbers or bool, not {array.dtype}")
        array = array.astype(np.float32)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    if array.ndim > 3:
        raise ValueError(f"mask must be [n_q, n_k] or [H, n_q, n_k] (or broadcast to it), got "
                         f"shape {array.shape}")
    shape = (n_heads, n_q, n_k) if array.ndim == 3 else (n_q, n_k)
    try:
        view = np.broadcast_to(array, shape)
    except ValueError:
        raise ValueError(f"mask of shape {array.shape} does not broadcast to {shape}") from None
    itemsize = view.dtype.itemsize

    def fits(v):
        strides = v.strides
        key_ok = n_k <= 1 or strides[-1] == itemsize
        row_ok = n_q <= 1 or (strides[-2] % itemsize == 0 and strides[-2] >= n_k * itemsize)
        head_ok = v.ndim == 2 or n_heads <= 1 or (strides[0] >= 0 and strides[0] % itemsize == 0)
        return key_ok and row_ok and head_ok and (v.size == 0 or v.flags.aligned)

    if not fits(view):
        view = np.ascontiguousarray(view)
    row = view.strides[-2] // itemsize if n_q > 1 else 0
    head = view.strides[0] // itemsize if view.ndim == 3 and n_heads > 1 else 0
    code = _lib.DTYPE_F32 if view.dtype == np.float32 else _lib.DTYPE_F16
    return view, code, row, head


def softmax(x, *, out=None, scale=1.0, mask=None, slopes=None, sinks=None, kpos=None,
            qpos=None, q_offset=0, causal=False, window=None, softcap=None, alibi="signed",
            x_dtype=None, out_dtype=None):
    """The fused attention-score softmax of llama.cpp's ggml_soft_max_ext, PyTorch's SDPA
    with a mask and FlashAttention's masking: posenc_softmax. Returns out.

    For head h, query row i and key j, over the row's visible keys:
        t = s(scale * x) + mask + slope_h * (kpos_j - qpos_i)    (s: soft-capping or none)
        y = exp(t - M) / (sum_k exp(t_k - M) + exp(sink_h - M)),  M = max(max_k t_k, sink_h)
    Hidden keys (mask -inf, causal, window) get +0; a row with nothing visible (or only -inf)
    is all +0; a NaN or +inf t makes the row's visible y NaN. Each float step rounds as the
    header orders it; y is within 2^-18 y* + 2^-24 of the exact softmax (a 16-bit y: plus its
    rounding).

    x: scores [H, n_q, n_k], or [n_q, n_k] for one head; float32, float16, bfloat16 (an
    ml_dtypes-style array, or uint16 bits: bfloat16 unless x_dtype="float16"). Strides are
    the array's (whole elements, keys contiguous; heads may repeat with stride 0). out: None
    for a new array of x's shape and type (or out_dtype: "float32", "bf16", "f16", ...;
    bfloat16 as uint16 bits), x itself for in place, or a writeable array of x's shape (a
    uint16 out holds x's 16-bit type unless out_dtype says) not overlapping x.
    mask: None, [n_q, n_k] shared by the heads or [H, n_q, n_k] (anything that broadcasts to
    them), float32 or float16 (used without a copy when its layout allows), bool (True =
    attend: 0, else -inf) or another real type (as float32). slopes: H ALiBi slopes, or None;
    alibi: "signed" (slope * (kpos - qpos), llama.cpp's and BLOOM's), "symmetric"
    (-(slope * |kpos - qpos|), posenc_alibi_add_f32's) or "mask_slope" (ggml's: the mask term
    is slope * mask, no position term; needs mask and slopes). sinks: H logits added to each
    denominator (gpt-oss), or None. kpos: n_k key positions (default j); qpos: n_q query
    positions, or None for q_offset + i. causal: hide kpos > qpos; window: hide
    qpos - kpos >= window (a sliding window of that many keys, >= 1); softcap: c, with
    s(u) = c tanh(u / c) (Gemma 2). Errors of the C call (non-finite scale, slope or sink,
    negative positions, window < 1, softcap <= 0, overlapping x and out, ...) raise
    PosencError and write nothing.
    """
    declared = None if x_dtype is None else _storage_type("x_dtype", x_dtype)
    x_code = _array_type("x", x, declared)
    if x.ndim not in (2, 3):
        raise ValueError(f"x must be 3-D [heads, queries, keys] or 2-D [queries, keys], got "
                         f"shape {x.shape}")
    wanted = None if out_dtype is None else _storage_type("out_dtype", out_dtype)
    if out is None:
        out_code = x_code if wanted is None else wanted
        out = np.empty(x.shape, x.dtype if out_code == x_code else _NUMPY_STORAGE[out_code])
    else:
        out_code = _array_type("out", out, wanted, prefer=x_code)
        if out.shape != x.shape:
            raise ValueError(f"out {out.shape} must have the shape of x {x.shape}")
        if not out.flags.writeable:
            raise ValueError("out is read-only; posenc writes the probabilities into it")
    n_heads, (n_q, n_k) = (x.shape[0] if x.ndim == 3 else 1), x.shape[-2:]
    x_view = _scores_view("x", x, x_code, source=True)
    y_view = _scores_view("out", out, out_code, source=False)

    if not isinstance(alibi, str) or alibi not in _ALIBI_FORMS:
        raise ValueError(f"alibi must be one of {', '.join(map(repr, _ALIBI_FORMS))}, not "
                         f"{alibi!r}")
    flags = _ALIBI_FORMS[alibi]
    flags |= _lib.SOFTMAX_CAUSAL if causal else 0
    params = _lib.SoftmaxParams(scale=_float("scale", scale))
    if window is not None:
        flags |= _lib.SOFTMAX_WINDOW
        params.window = _int32("window", window)
    if softcap is not None:
        flags |= _lib.SOFTMAX_SOFTCAP
        params.softcap = _float("softcap", softcap)
    params.flags = flags
    keep = []  # arrays the C call reads, alive until it returns
    if mask is not None:
        m, params.mask_dtype, params.mask_row_stride, params.mask_head_stride = _softmax_mask(
            mask, n_heads, n_q, n_k)
        keep.append(m)
        params.mask = _address(m)
    if slopes is not None:
        keep.append(_real_vector("slopes", slopes, np.float32, n_heads))
        params.slopes = _address(keep[-1])
    if sinks is not None:
        keep.append(_real_vector("sinks", sinks, np.float32, n_heads))
        params.sinks = _address(keep[-1])
    if kpos is not None:
        keep.append(_named_positions("kpos", kpos, n_k))
        params.kpos = _address(keep[-1])
    q_offset = _int32("q_offset", q_offset)
    if qpos is not None:
        if q_offset != 0:
            raise ValueError("pass either qpos or q_offset, not both")
        keep.append(_named_positions("qpos", qpos, n_q))
        params.qpos = _address(keep[-1])
    params.q_offset = q_offset
    _check(lib.posenc_softmax(ctypes.byref(params), n_heads, n_q, n_k, ctypes.byref(x_view),
                              ctypes.byref(y_view)),
           "posenc_softmax")
    return out
