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
    """The posenc_scores_view of a [B, H, n_q, n_k], [H, n_q, n_k] or [n_q, n_k] (one head)
    array. A source may repeat heads and batches (zero strides), not rows: the C row stride
    0 means n_k."""
    if array.ndim not in (2, 3, 4):
        raise ValueError(f"{name} must be 3-D [heads, queries, keys], 2-D [queries, keys] or "
                         f"4-D [batch, heads, queries, keys], got shape {array.shape}")
    strides = _element_strides(name, array, source)
    if array.ndim == 2:
        strides = [strides[0] * array.shape[0]] + strides  # one head: never used
    if array.size and array.shape[-2] > 1 and strides[-2] == 0:
        raise ValueError(f"{name}: a zero (broadcast) stride on the query axis is not supported "
                         "(posenc's row stride 0 means n_k); pass a copy")
    batch = strides[0] if array.ndim == 4 else 0
    return _lib.ScoresView(_address(array), code, strides[-3], strides[-2], batch)


def _mask_values(mask, x_ndim):
    """The additive float32 or float16 array of a mask, by its type: floating masks are
    added as they are (float32 and float16 without a copy; float64 and an extension's
    bfloat16 as float32); a bool mask is True = attend, as PyTorch's
    scaled_dot_product_attention reads it, and an integer mask is HF's attention_mask, 1 =
    attend, 0 = masked (any other value is refused): both become 0.0 where attended, -inf
    elsewhere. uint16 (bfloat16 bits, or 0/1?) is refused. An integer mask of 2 axes with
    4-D scores is refused too: HF's attention_mask is [batch, keys], which would broadcast
    as [queries, keys]."""
    array = np.asarray(mask)
    kind = array.dtype.kind
    if array.dtype == np.uint16:
        raise TypeError("mask: uint16 could be bfloat16 bits or a 0/1 attention mask; pass a "
                        "floating mask (float32, float16; added to the scores), a bool mask "
                        "(True = attend) or an int32 / int64 HF attention_mask (1 = attend)")
    if array.dtype == np.bool_ or kind in "iu":
        if kind in "iu":
            if array.size and not np.all((array == 0) | (array == 1)):
                bad = array[(array != 0) & (array != 1)].flat[0]
                raise ValueError(
                    f"mask: an integer mask is HF's attention_mask (1 = attend, 0 = masked), "
                    f"and this one holds {bad}; pass an additive mask as floating point "
                    "(0 to attend, -inf to hide), or a bool mask (True = attend)")
            if array.ndim == 2 and x_ndim == 4:
                raise ValueError(
                    f"mask: an integer mask of shape {array.shape} with 4-D scores [B, H, "
                    "n_q, n_k] is ambiguous: HF's attention_mask is [batch, keys]; pass it as "
                    "mask[:, None, None, :] ([B, 1, 1, n_k]), or a [queries, keys] mask as "
                    "mask[None, None]")
        return np.where(array != 0, np.float32(0.0), np.float32(-np.inf))
    if array.dtype not in (np.float32, np.float16):
        if kind != "f" and not _is_bfloat16(array.dtype):
            raise TypeError(f"mask must be floating (added), bool or an integer 0/1 HF "
                            f"attention_mask, not {array.dtype}")
        array = array.astype(np.float32)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def _softmax_mask(array, n_batch, n_heads, n_q, n_k, x_ndim):
    """(array kept alive, posenc_dtype, row stride, head stride, mask_n_heads, batch stride,
    mask_n_batch) of a float32 / float16 mask (_mask_values): [n_q, n_k] (shared by the
    heads and batches), [Hm, n_q, n_k] or, with 4-D scores, [Bm, Hm, n_q, n_k], read by
    ggml's rule: head h uses mask head h % Hm, batch b mask batch b % Bm (Hm must divide
    the heads, Bm the batches, as ggml_soft_max_ext asserts); the query and key axes
    broadcast as NumPy does. Copied only where its strides do not fit the C layout (keys
    contiguous, rows at least n_k apart, heads and batches at non-negative strides)."""
    if array.ndim > (4 if x_ndim == 4 else 3):
        shapes = "[n_q, n_k] or [Hm, n_q, n_k]" if x_ndim < 4 else \
            "[n_q, n_k], [Hm, n_q, n_k] or [Bm, Hm, n_q, n_k]"
        raise ValueError(f"mask must be {shapes}, got shape {array.shape}")
    m4 = array[(None,) * (4 - array.ndim)]
    n_mb, n_mh = m4.shape[0], m4.shape[1]
    for what, n, m, rule in (("heads", n_heads, n_mh, "head h reads mask head h % Hm"),
                             ("batches", n_batch, n_mb, "batch b reads mask batch b % Bm")):
        if (n % m != 0) if m else n != 0:
            raise ValueError(f"mask of shape {array.shape} does not broadcast: its {m} {what} "
                             f"do not divide the scores' {n} (ggml's rule: {rule})")
    try:
        view = np.broadcast_to(m4, (n_mb, n_mh, n_q, n_k))
    except ValueError:
        raise ValueError(f"mask of shape {array.shape} does not broadcast to [..., {n_q}, "
                         f"{n_k}] (queries, keys)") from None
    itemsize = view.dtype.itemsize

    def fits(v):
        strides = v.strides
        key_ok = n_k <= 1 or strides[3] == itemsize
        row_ok = n_q <= 1 or (strides[2] % itemsize == 0 and strides[2] >= n_k * itemsize)
        head_ok = n_mh <= 1 or (strides[1] >= 0 and strides[1] % itemsize == 0)
        batch_ok = n_mb <= 1 or (strides[0] >= 0 and strides[0] % itemsize == 0)
        return key_ok and row_ok and head_ok and batch_ok and (v.size == 0 or v.flags.aligned)

    if not fits(view):
        view = np.ascontiguousarray(view)
    row = view.strides[2] // itemsize if n_q > 1 else 0
    head = view.strides[1] // itemsize if n_mh > 1 else 0
    batch = view.strides[0] // itemsize if n_mb > 1 else 0
    code = _lib.DTYPE_F32 if view.dtype == np.float32 else _lib.DTYPE_F16
    return (view, code, row, head, n_mh if n_mh > 1 else 0, batch, n_mb if n_mb > 1 else 0)


def _softmax_positions(name, values, n):
    """(array, is_int64): an int64 array as it is (posenc_softmax_params' kpos64 / qpos64:
    the library refuses a value outside the int32 range, no cast), else int32 positions
    (other integer types converted after a range check)."""
    array = np.asarray(values)
    if array.dtype == np.int64 and array.dtype.isnative and array.ndim == 1 \
            and array.shape[0] == n:
        return np.ascontiguousarray(array), True
    return _named_positions(name, values, n), False


def softmax(x, *, out=None, scale=1.0, mask=None, slopes=None, sinks=None, kpos=None,
            qpos=None, q_offset=0, causal=False, window=None, softcap=None, alibi="signed",
            kpos_neg_hidden=False, x_dtype=None, out_dtype=None):
    """The fused attention-score softmax of llama.cpp's ggml_soft_max_ext, PyTorch's SDPA
    with a mask and FlashAttention's masking: posenc_softmax. Returns out.

    For head h, query row i and key j, over the row's visible keys:
        t = s(scale * x) + mask + slope_h * (kpos_j - qpos_i)    (s: soft-capping or none)
        y = exp(t - M) / (sum_k exp(t_k - M) + exp(sink_h - M)),  M = max(max_k t_k, sink_h)
    Hidden keys (mask -inf, causal, window) get +0; a row with nothing visible (or only -inf)
    is all +0; a NaN or +inf t makes the row's visible y NaN. Each float step rounds as the
    header orders it; y is within 2^-18 y* + 2^-24 of the exact softmax (a 16-bit y: plus its
    rounding).

    x: scores [H, n_q, n_k], [n_q, n_k] for one head, or [B, H, n_q, n_k] (HF's and vLLM's
    attention scores, ggml's [n_k, n_q, H, B]: one posenc_softmax_batched call, slopes,
    sinks and positions shared by the batches); float32, float16, bfloat16 (an
    ml_dtypes-style array, or uint16 bits: bfloat16 unless x_dtype="float16"). Strides are
    the array's (whole elements, keys contiguous; heads and batches may repeat with stride
    0). out: None
    for a new array of x's shape and type (or out_dtype: "float32", "bf16", "f16", ...;
    bfloat16 as uint16 bits), x itself for in place, or a writeable array of x's shape (a
    uint16 out holds x's 16-bit type unless out_dtype says) not overlapping x.
    mask: None, [n_q, n_k] (shared by the heads), [Hm, n_q, n_k] or, with 4-D x, [Bm, Hm,
    n_q, n_k], read by ggml_soft_max_ext's rule: head h uses mask head h % Hm and batch b
    mask batch b % Bm, Hm dividing H and Bm dividing B (else ValueError); so [H, n_q, n_k]
    one per head and HF's [B, 1, n_q, n_k] one per batch; the query and key axes broadcast
    as NumPy's do ([1, n_k]). Its type says what it means: floating (float32,
    float16: used without a copy when its layout allows; float64, bfloat16: as float32) is
    added to the scores; bool is True = attend (PyTorch SDPA's attn_mask: 0, else -inf);
    integer is HF's attention_mask, 1 = attend, 0 = masked (values other than 0 and 1 are a
    ValueError; a 2-D integer mask with 4-D x is refused as ambiguous, [B, n_k] or
    [n_q, n_k]: pass mask[:, None, None, :]); uint16 is refused. slopes: H ALiBi slopes, or None;
    alibi: "signed" (slope * (kpos - qpos), llama.cpp's and BLOOM's), "symmetric"
    (-(slope * |kpos - qpos|), posenc_alibi_add_f32's) or "mask_slope" (ggml's: the mask term
    is slope * mask, no position term; needs mask and slopes). sinks: H logits added to each
    denominator (gpt-oss), or None. kpos: n_k key positions (default j; int32, or int64 as
    vLLM and FlashInfer pass them, read as they are: a value outside the int32 range is a
    PosencError, never cast; other integer types are range-checked and converted); a negative one
    marks an empty KV-cache cell (llama.cpp's -1) and is allowed only where the key is
    hidden: by the mask (-inf in every row) or by kpos_neg_hidden=True
    (POSENC_SOFTMAX_KPOS_NEG_HIDDEN: every key with kpos < 0 hidden, as if masked); qpos:
    n_q query positions (int32 or int64, as kpos), or None for q_offset + i. causal: hide
    kpos > qpos; window: hide qpos - kpos >= window (a sliding window of that many keys,
    >= 1); softcap: c, with
    s(u) = c tanh(u / c) (Gemma 2). Errors of the C call (non-finite scale, slope or sink,
    negative positions (a kpos < 0 at a key left visible), window < 1, softcap <= 0,
    overlapping x and out, ...) raise PosencError and write nothing.
    """
    declared = None if x_dtype is None else _storage_type("x_dtype", x_dtype)
    x_code = _array_type("x", x, declared)
    if x.ndim not in (2, 3, 4):
        raise ValueError(f"x must be 3-D [heads, queries, keys], 2-D [queries, keys] or 4-D "
                         f"[batch, heads, queries, keys], got shape {x.shape}")
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
        if x.ndim == 4 and not _same_view(x, out) and np.may_share_memory(x, out):
            raise ValueError("out overlaps x (other than out being x itself): pass a separate "
                             "array, or out=x for in place")
    n_heads = x.shape[-3] if x.ndim >= 3 else 1
    n_q, n_k = x.shape[-2:]

    if not isinstance(alibi, str) or alibi not in _ALIBI_FORMS:
        raise ValueError(f"alibi must be one of {', '.join(map(repr, _ALIBI_FORMS))}, not "
                         f"{alibi!r}")
    flags = _ALIBI_FORMS[alibi]
    flags |= _lib.SOFTMAX_CAUSAL if causal else 0
    flags |= _lib.SOFTMAX_KPOS_NEG_HIDDEN if kpos_neg_hidden else 0
    params = _lib.SoftmaxParams(scale=_float("scale", scale))
    if window is not None:
        flags |= _lib.SOFTMAX_WINDOW
        params.window = _int32("window", window)
    if softcap is not None:
        flags |= _lib.SOFTMAX_SOFTCAP
        params.softcap = _float("softcap", softcap)
    params.flags = flags
    keep = []  # arrays the C call reads, alive until it returns
    if slopes is not None:
        keep.append(_real_vector("slopes", slopes, np.float32, n_heads))
        params.slopes = _address(keep[-1])
    if sinks is not None:
        keep.append(_real_vector("sinks", sinks, np.float32, n_heads))
        params.sinks = _address(keep[-1])
    if kpos is not None:
        array, wide = _softmax_positions("kpos", kpos, n_k)
        keep.append(array)
        setattr(params, "kpos64" if wide else "kpos", _address(array))
    q_offset = _int32("q_offset", q_offset)
    if qpos is not None:
        if q_offset != 0:
            raise ValueError("pass either qpos or q_offset, not both")
        array, wide = _softmax_positions("qpos", qpos, n_q)
        keep.append(array)
        setattr(params, "qpos64" if wide else "qpos", _address(array))
    params.q_offset = q_offset

    values = None if mask is None else _mask_values(mask, x.ndim)
    n_batch = x.shape[0] if x.ndim == 4 else 1
    x_view = _scores_view("x", x, x_code, source=True)
    y_view = _scores_view("out", out, out_code, source=False)
    if values is not None:
        (m, params.mask_dtype, params.mask_row_stride, params.mask_head_stride,
         params.mask_n_heads, params.mask_batch_stride, params.mask_n_batch) = _softmax_mask(
             values, n_batch, n_heads, n_q, n_k, x.ndim)
        keep.append(m)
        params.mask = _address(m)
    if x.ndim < 4:
        _check(lib.posenc_softmax(ctypes.byref(params), n_heads, n_q, n_k, ctypes.byref(x_view),
                                  ctypes.byref(y_view)),
               "posenc_softmax")
    else:  # one C call over the batches, every one checked before any is written
        _check(lib.posenc_softmax_batched(ctypes.byref(params), n_batch, n_heads, n_q, n_k,
                                          ctypes.byref(x_view), ctypes.byref(y_view)),
               "posenc_softmax_batched")
    return out


def _same_view(a, b):
    """Whether two arrays are the same view of the same memory (in place)."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.strides == b.strides and a.dtype.itemsize == b.dtype.itemsize)
