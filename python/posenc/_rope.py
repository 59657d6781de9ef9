"""RoPE on [L, H, D] views in place (rope, mrope, rope_rerotate) and on batches out of
place (rope_out, mrope_out)."""

import ctypes

import numpy as np

from . import _lib
from ._lib import lib
from ._core import (_DTYPE_LABELS, _NUMPY_STORAGE, _address, _array_type, _c_function, _check,
                    _data, _element_strides, _layout, _plan_handle, _pointer, _positions,
                    _positions_flag, _storage_type)
from ._plans import RopePlan, _resolve


_ROPE_LAYOUTS = {"neox": 0, "gptj": _lib.ROPE_GPTJ}


def _plan_layout(layout, plan):
    """layout, or when None the plan's: a plan from RopePlan.from_hf_config carries its
    family's pair layout (plan.hf.layout: "gptj" for GPT-J, CodeGen, Cohere, GLM, DeepSeek,
    ...), any other plan "neox"."""
    if layout is not None:
        return layout
    ggml = getattr(plan, "ggml", None)  # RopePlan.from_ggml(..., mode=...)
    if ggml is not None:
        return ggml["layout"]
    return getattr(getattr(plan, "hf", None), "layout", "neox")


def _mrope_rule(plan, interleaved, ggml):
    """(interleaved, ggml) of an M-RoPE call: each None means the plan's (a plan made by
    RopePlan.from_ggml with an M-RoPE mode: its mode's; any other plan: False)."""
    own = getattr(plan, "ggml", None) or {}
    if interleaved is None:
        interleaved = own.get("interleaved", False)
    if ggml is None:
        ggml = own.get("ggml", False)
    return bool(interleaved), bool(ggml)


def _rope_flags(layout, inverse=False, f32_angles=False, interleaved=False, plan=None,
                deterministic=False, ggml=False):
    flags = _layout(_plan_layout(layout, plan), _ROPE_LAYOUTS)
    flags |= _lib.ROPE_MROPE_GGML if ggml else 0
    flags |= _lib.ROPE_DETERMINISTIC if deterministic else 0
    flags |= _lib.ROPE_INVERSE if inverse else 0
    flags |= _lib.ROPE_F32_ANGLES if f32_angles else 0
    flags |= _lib.ROPE_MROPE_INTERLEAVED if interleaved else 0
    return flags


def _sections(sections, ggml=False):
    """The C array of M-RoPE sections: three pair counts (HF's mrope_section), four with
    ggml's rule (GGUF's rope.dimension_sections)."""
    n = 4 if ggml else 3
    sec = [int(x) for x in sections]
    if len(sec) != n or min(sec) < 0:
        raise ValueError(f"sections must be {'four' if ggml else 'three'} pair counts >= 0"
                         f"{' (ggml=True)' if ggml else ''}, got {sections!r}")
    return (ctypes.c_size_t * n)(*sec)


def _rope_view(name, array, dtype):
    code, (token_stride, head_stride, _) = _data(name, array, 3, True, dtype)
    return code, _lib.RopeTensor(_address(array), array.shape[1], token_stride, head_stride)


def _qk_views(q, k, dtype):
    """The storage type of q (and k, which must match it) and their RopeTensor views (None
    when k is None); k must match q's tokens and head_dim."""
    code, q_view = _rope_view("q", q, dtype)
    if k is None:
        return code, q_view, None
    k_code, k_view = _rope_view("k", k, dtype)
    if k_code != code:
        raise TypeError(f"k holds {_DTYPE_LABELS[k_code]} and q {_DTYPE_LABELS[code]}; they "
                        "must have one storage type")
    if k.shape[0] != q.shape[0] or k.shape[2] != q.shape[2]:
        raise ValueError(f"k {k.shape} must have the tokens and head_dim of q {q.shape}")
    return code, q_view, k_view


def _is_batched(q, axes):
    return axes is not None or (isinstance(q, np.ndarray) and q.ndim == 4)


def rope(plan, q, k=None, *, positions=None, start_pos=0, layout=None, inverse=False,
         f32_angles=False, deterministic=False, axes=None, dtype=None):
    """Rotates q (and k) in place: posenc_rope_f32, _bf16 or _f16 by q's storage type.

    q, k: arrays [L, H, D] (k may have its own head count, GQA/MQA), or any 3-D view indexed
    [token, head, element] whose strides are whole elements with the last axis contiguous
    ([H, L, D] storage as x.transpose(1, 0, 2), rows of a packed QKV buffer); or 4-D with a
    batch axis, in the order `axes` names ("BLHD", or "BHLD" as HF passes q and k; required
    for 4-D unless the positions' shape leaves one of the two: see rope_out), then rotated
    by rope_out(plan, x, dst=x, ...) each (in place, bitwise the same).
    Storage: float32, float16, bfloat16 (an ml_dtypes-style array, a torch tensor, or
    uint16 bits: bfloat16 unless dtype="float16"); q and k of one type.
    The first plan.rotary_dim elements of each head vector are rotated; the rest is kept.
    positions: L integer positions (int32 and int64 passed as they are, int64 with
    POSENC_ROPE_POSITIONS_INT64; other types converted to int32 after a range check), or
    None for start_pos + t; with a batch axis also [B, L] (HF's position_ids). layout: "neox" (pairs
    (x[i], x[i + R/2])) or "gptj" (pairs (x[2i], x[2i+1])); None (the default): the plan's
    family's (plan.hf.layout of RopePlan.from_hf_config, e.g. "gptj" for GPT-J, GLM,
    Cohere, DeepSeek), else "neox". inverse: rotate by -angle
    (POSENC_ROPE_INVERSE). f32_angles: the float32 angle recipe of most reference code
    (POSENC_ROPE_F32_ANGLES). deterministic: results bitwise identical on every ISA and CPU
    (POSENC_ROPE_DETERMINISTIC: one fixed sequence of IEEE operations, no FMA, no libm;
    combines with every other option). Returns None.
    """
    if _is_batched(q, axes):
        for x in (q, k):
            if x is not None:
                rope_out(plan, x, dst=x, positions=positions, start_pos=start_pos, axes=axes,
                         layout=layout, inverse=inverse, f32_angles=f32_angles,
                         deterministic=deterministic, src_dtype=dtype,
                         dst_dtype=dtype)
        return None
    code, q_view, k_view = _qk_views(q, k, dtype)
    n_tokens, _, head_dim = q.shape
    positions, start_pos = _positions(positions, n_tokens, start_pos, wide=True)
    plan_used = _resolve(plan, positions, start_pos, n_tokens)  # alive through the call
    handle = plan_used._ptr()
    function, name = _c_function("posenc_rope", code)
    _check(function(handle, head_dim, n_tokens, _pointer(positions), start_pos,
                    ctypes.byref(q_view), None if k_view is None else ctypes.byref(k_view),
                    _rope_flags(layout, inverse, f32_angles, plan=plan,
                                deterministic=deterministic) | _positions_flag(positions)),
           name)


def mrope(plan, sections, q, k=None, *, positions=None, layout=None, interleaved=None, ggml=None,
          inverse=False, f32_angles=False, deterministic=False, axes=None, dtype=None):
    """Multimodal RoPE (Qwen2-VL; Qwen3-VL with interleaved=True) in place:
    posenc_mrope_f32, _bf16 or _f16 by q's storage type.

    q, k, axes, dtype, layout, inverse, f32_angles, deterministic: as for rope() (4-D:
    mrope_out in place, positions (3, B, L)).
    positions: integers of shape (3, L), HF's position_ids (3, batch, seq) for one sequence:
    rows temporal, height, width. sections: HF's mrope_section, three pair counts summing to
    plan.rotary_dim / 2. Pair i takes its angle from the row its section says (contiguous
    sections, or interleaved: height if i % 3 == 1 and i < 3 * sections[1], width if
    i % 3 == 2 and i < 3 * sections[2], else temporal); the rest is rope(). Returns None.
    ggml=True: ggml's M-RoPE (POSENC_ROPE_MROPE_GGML): four sections and positions of shape
    (4, L) (rows t, h, w, e; llama.cpp gives text tokens e = 0), pairs assigned as
    ggml_mrope_cache_init does (see posenc.h). interleaved and ggml default to the plan's
    (RopePlan.from_ggml with an M-RoPE mode), else False.
    """
    interleaved, ggml = _mrope_rule(plan, interleaved, ggml)
    n_rows = 4 if ggml else 3
    if _is_batched(q, axes):
        for x in (q, k):
            if x is not None:
                mrope_out(plan, sections, x, dst=x, positions=positions, axes=axes,
                          layout=layout, interleaved=interleaved, ggml=ggml, inverse=inverse,
                          f32_angles=f32_angles, deterministic=deterministic,
                          src_dtype=dtype, dst_dtype=dtype)
        return None
    code, q_view, k_view = _qk_views(q, k, dtype)
    n_tokens, _, head_dim = q.shape
    rows = np.asarray(positions if positions is not None else np.zeros((n_rows, 0), np.int32))
    if rows.ndim != 2 or rows.shape != (n_rows, n_tokens):
        raise ValueError(f"positions must have shape ({n_rows}, {n_tokens}), got {rows.shape}")
    flat, _ = _positions(rows.reshape(-1), n_rows * n_tokens, 0, wide=True)
    plan_used = _resolve(plan, flat, 0, n_tokens)  # alive through the call
    handle = plan_used._ptr()
    function, name = _c_function("posenc_mrope", code)
    _check(function(handle, _sections(sections, ggml), head_dim, n_tokens, _pointer(flat),
                    ctypes.byref(q_view), None if k_view is None else ctypes.byref(k_view),
                    _rope_flags(layout, inverse, f32_angles, interleaved, plan=plan,
                                deterministic=deterministic, ggml=ggml) |
                    _positions_flag(flat)),
           name)


def _rerotate_plan(layout, from_plan, to_plan):
    """The plan whose layout rope_rerotate uses when given none; the two must agree."""
    if layout is None and _plan_layout(None, from_plan) != _plan_layout(None, to_plan):
        raise ValueError(f"from_plan's pair layout ({_plan_layout(None, from_plan)!r}) is not "
                         f"to_plan's ({_plan_layout(None, to_plan)!r}): pass layout=")
    return from_plan


def rope_rerotate(from_plan, to_plan, k, *, from_positions=None, from_start=0,
                  to_positions=None, to_start=0, layout=None, f32_angles=False,
                  deterministic=False, dtype=None):
    """Re-rotates cached keys in place in one pass: posenc_rope_rerotate_f32, _bf16 or _f16
    by k's storage type.

    k: [L, H, D] (as for rope(); float32, float16 or bfloat16) holding keys rotated by
    (from_plan, position p_t); afterwards they are rotated by (to_plan, p'_t): each pair by
    p'_t w'_i - p_t w_i, scaled by to_plan.attention_factor / from_plan.attention_factor.
    Positions: L integers, or None for a run from *_start. layout, f32_angles,
    deterministic: as for rope(). Returns None.
    """
    code, k_view = _rope_view("k", k, dtype)
    n_tokens, _, head_dim = k.shape
    from_pos, from_start = _positions(from_positions, n_tokens, from_start, wide=True)
    to_pos, to_start = _positions(to_positions, n_tokens, to_start, wide=True)
    wide = _positions_flag(from_pos, to_pos)
    if wide:  # one flag for both arrays: an int32 one is widened (L values)
        from_pos, to_pos = (None if a is None else a.astype(np.int64, copy=False)
                            for a in (from_pos, to_pos))
    from_plan_used = _resolve(from_plan, from_pos, from_start, n_tokens)  # alive in the call
    from_handle = from_plan_used._ptr()
    to_plan_used = _resolve(to_plan, to_pos, to_start, n_tokens)
    to_handle = to_plan_used._ptr()
    function, name = _c_function("posenc_rope_rerotate", code)
    _check(function(from_handle, _pointer(from_pos), from_start, to_handle, _pointer(to_pos),
                    to_start, head_dim, n_tokens, ctypes.byref(k_view),
                    _rope_flags(layout, f32_angles=f32_angles, plan=_rerotate_plan(
                        layout, from_plan, to_plan), deterministic=deterministic) | wide),
           name)


def _axes(axes, shape, tokens=None, name="src"):
    """The axis order of a 4-D ([B, L, H, D] ...) or 3-D ([L, H, D] ...) array of this shape:
    a string of B (batch), L (tokens), H (heads) and D (the head vector, last). A 3-D array
    defaults to "LHD". A 4-D one has no default (llama.cpp and vLLM hold [B, L, H, D], HF
    passes [B, H, L, D]): axes is required, unless the positions' shape tells, `tokens` =
    (n_batch or None, n_tokens) from them, and exactly one of "BLHD" and "BHLD" has that
    many tokens (and that batch)."""
    ndim = len(shape)
    if ndim not in (3, 4):
        raise ValueError(f"{name} must be 4-D (batch, tokens, heads, head_dim in the order "
                         f"axes names) or 3-D (no batch), got {ndim}-D")
    letters = "BLHD" if ndim == 4 else "LHD"
    if axes is None:
        if ndim == 3:
            return letters
        fits = []
        if tokens is not None:
            n_batch, n_tokens = tokens
            fits = [order for order in ("BLHD", "BHLD") if shape[order.index("L")] == n_tokens
                    and n_batch in (None, shape[0])]
        if len(fits) == 1:
            return fits[0]
        why = ("and no positions tell its token axis" if tokens is None else
               f"and positions of {tokens[1]} tokens fit both its axes 1 and 2" if fits else
               f"and positions of shape {tokens} fit neither order")
        raise ValueError(
            f"{name} is 4-D {tuple(shape)} {why}: pass axes='BLHD' ([batch, tokens, heads, "
            "head_dim]: llama.cpp, vLLM) or axes='BHLD' ([batch, heads, tokens, head_dim]: "
            "HF transformers' q and k); posenc does not guess")
    if not isinstance(axes, str):
        raise TypeError(f"axes must be a str such as 'BLHD' or 'BHLD', not {type(axes).__name__}")
    order = axes.upper()
    if sorted(order) != sorted(letters) or order[-1] != "D":
        raise ValueError(f"axes {axes!r} must order the letters of {letters!r} with D last, for "
                         f"a {ndim}-D array")
    return order


def _tokens(positions, mrope=False):
    """(n_batch or None, n_tokens) that positions of this shape give ([B, L] or [L]; M-RoPE:
    (rows, B, L) or (rows, L), rows = mrope (3, or 4 with ggml's rule)), None when they give
    none (no positions, another shape)."""
    if positions is None:
        return None
    shape = np.shape(positions)
    if mrope:
        if len(shape) < 2 or shape[0] != int(mrope):
            return None
        shape = shape[1:]
    if len(shape) == 1:
        return None, shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    return None


def _view(name, array, code, axes, source):
    """A posenc_rope_view of array (axes: its axis order) and its (n_batch, n_tokens,
    n_heads, head_dim)."""
    strides = _element_strides(name, array, source)
    where = {letter: i for i, letter in enumerate(axes)}
    n_batch = array.shape[where["B"]] if "B" in where else 1
    batch_stride = strides[where["B"]] if "B" in where else 0
    view = _lib.RopeView(_address(array), code, array.shape[where["H"]],
                         strides[where["L"]], strides[where["H"]], batch_stride)
    return view, (n_batch, array.shape[where["L"]], array.shape[where["H"]], array.shape[-1])


def _src_dst(src, dst, axes, src_dtype, dst_dtype, tokens=None):
    """Checks src and dst (allocated when None: src's shape, C order) and returns (dst,
    src view, dst view, (n_batch, n_tokens, n_heads, head_dim)). The type pair itself is
    the C function's to accept. tokens: what the positions say (_axes)."""
    declared = None if src_dtype is None else _storage_type("src_dtype", src_dtype)
    src_code = _array_type("src", src, declared)
    axes = _axes(axes, src.shape, tokens)
    wanted = None if dst_dtype is None else _storage_type("dst_dtype", dst_dtype)
    if dst is None:
        dst_code = src_code if wanted is None else wanted
        dst = np.empty(src.shape, src.dtype if dst_code == src_code else _NUMPY_STORAGE[dst_code])
    else:
        dst_code = _array_type("dst", dst, wanted, prefer=src_code)
        if dst.shape != src.shape:
            raise ValueError(f"dst {dst.shape} must have the shape of src {src.shape}")
        if not dst.flags.writeable:
            raise ValueError("dst is read-only; posenc writes into it")
    src_view, dims = _view("src", src, src_code, axes, source=True)
    dst_view, _ = _view("dst", dst, dst_code, axes, source=False)
    return dst, src_view, dst_view, dims


def _batch_positions(positions, n_batch, n_tokens, start_pos):
    """Positions of n_batch x n_tokens tokens: None (start_pos + t in every batch), [B, L]
    (HF's position_ids) or [L] (the same in every batch). Returns (int32 array of B * L
    entries, row-major, or None; start_pos)."""
    if positions is None:
        return _positions(None, n_tokens, start_pos)
    array = np.asarray(positions)
    if array.ndim == 1 and array.shape[0] == n_tokens:
        array = np.broadcast_to(array, (n_batch, n_tokens))
    elif array.shape != (n_batch, n_tokens):
        raise ValueError(f"positions must have shape ({n_batch}, {n_tokens}) or ({n_tokens},), "
                         f"got {array.shape}")
    return _positions(array.reshape(-1), n_batch * n_tokens, start_pos, wide=True)


def _mrope_positions(positions, n_batch, n_tokens, rows=3):
    """M-RoPE positions of n_batch x n_tokens tokens: (rows, B, L) (HF's position_ids) or
    (rows, L) (the same in every batch); rows 3, or 4 with ggml's rule. Returns the int32
    array of rows * B * L entries."""
    array = np.asarray(positions if positions is not None else np.zeros((rows, 0), np.int32))
    if array.ndim == 2 and array.shape == (rows, n_tokens):
        array = np.broadcast_to(array[:, None, :], (rows, n_batch, n_tokens))
    elif array.shape != (rows, n_batch, n_tokens):
        raise ValueError(f"positions must have shape ({rows}, {n_batch}, {n_tokens}) or "
                         f"({rows}, {n_tokens}), got {array.shape}")
    flat, _ = _positions(array.reshape(-1), rows * n_batch * n_tokens, 0, wide=True)
    return flat


def rope_out(plan, src, *, dst=None, positions=None, start_pos=0, axes=None, layout=None,
             inverse=False, f32_angles=False, deterministic=False, src_dtype=None,
             dst_dtype=None):
    """Out-of-place RoPE over a batch, dst = rope(src): posenc_rope_out. Returns dst.

    src: a 4-D array whose axis order `axes` names with the letters B (batch), L (tokens),
    H (heads) and D (head_dim, last): "BLHD" (llama.cpp, vLLM) or "BHLD" (HF transformers),
    or any other order; or a 3-D array, "LHD" (default) or "HLD". A 4-D src has no default:
    without axes, positions of shape [B, L] or [L] pick "BLHD" or "BHLD" when exactly one of
    them has L tokens there (and B batches); otherwise (no positions, or heads == tokens) it
    is a ValueError naming axes. Strides are
    taken from the array (whole elements; the last axis contiguous); src is only read and
    may broadcast (zero strides, e.g. one tensor for every batch).
    Storage types: float32, float16, bfloat16 (an ml_dtypes-style bfloat16 array, or uint16
    holding its bits: NumPy has no bfloat16) and uint16 holding float16 bits with
    src_dtype="float16". Pairs (src -> dst): float32 -> float32 / bfloat16 / float16
    (rounded once, to nearest even), bfloat16 -> bfloat16, float16 -> float16; any other is
    refused by the C library (PosencError).
    dst: None for a new C-order array of src's shape, of type dst_dtype ("float32", "bf16",
    "f16", ...; default src's; bfloat16 as uint16 bits), or a writeable array of src's shape
    (a uint16 dst holds src's 16-bit type, else bfloat16, unless dst_dtype says). dst is src
    (the same view) rotates in place; any other overlap of the two is refused.
    positions: None (start_pos + t in every batch), [B, L] integers (HF's position_ids: token
    t of batch b at positions[b, t]), or [L] for every batch. layout, inverse, f32_angles,
    deterministic: as for rope(). Each rotated element is bitwise what rope() (or the C
    library's in-place bf16/f16 form for 16-bit sources) gives at the same position, rounded
    to dst's type.
    """
    _plan_handle(plan, RopePlan)
    dst, src_view, dst_view, (n_batch, n_tokens, _, head_dim) = _src_dst(
        src, dst, axes, src_dtype, dst_dtype, _tokens(positions))
    positions, start_pos = _batch_positions(positions, n_batch, n_tokens, start_pos)
    plan_used = _resolve(plan, positions, start_pos, n_tokens)  # alive through the call
    handle = plan_used._ptr()
    flags = _rope_flags(layout, inverse, f32_angles, plan=plan, deterministic=deterministic)
    flags |= _positions_flag(positions)
    _check(lib.posenc_rope_out(handle, head_dim, n_batch, n_tokens, _pointer(positions),
                               start_pos, ctypes.byref(src_view), ctypes.byref(dst_view), flags),
           "posenc_rope_out")
    return dst


def rope_out_slots(plan, src, cache, slots, *, positions=None, start_pos=0, axes=None,
                   cache_axes=None, layout=None, inverse=False, f32_angles=False,
                   deterministic=False, src_dtype=None, cache_dtype=None):
    """RoPE of src's tokens written into the cache cells `slots` chooses:
    posenc_rope_out_slots. Token t goes to cell slots[t], or nowhere where slots[t] < 0
    (vLLM's padding). Returns cache.

    src: a 3-D array of one batch, [L, H, D] ("LHD", default) or [H, L, D] ("HLD"), as
    rope_out's src. cache: a writeable 3-D array of cells whose axis order cache_axes names
    with C (cells), H and D: "CHD" (default; vLLM's [num_blocks, block_size, H, D] reshaped to
    [num_blocks * block_size, H, D], slots = vLLM's slot_mapping) or "HCD" (llama.cpp's K
    cache [H, cells, D]); its type is the destination type (cache_dtype names a uint16
    array's 16-bit type, "bfloat16" by default for uint16). slots: 1-D int32 or int64 of L
    cells (other integer types are refused, not converted). Each written cell is bitwise
    rope_out's row of its token; every other element of the cache is untouched. Cells out
    of range or repeated are refused before anything is written (PosencError).
    """
    _plan_handle(plan, RopePlan)
    src_view, cache_view, (n_tokens, head_dim, n_cells) = _slot_views(
        src, cache, axes, cache_axes, src_dtype, cache_dtype, _tokens(positions))
    positions, start_pos = _positions(positions, n_tokens, start_pos, wide=True)
    plan_used = _resolve(plan, positions, start_pos, n_tokens)  # alive through the call
    flags = _rope_flags(layout, inverse, f32_angles, plan=plan, deterministic=deterministic)
    flags |= _positions_flag(positions)
    cells, index = _slots_of(slots, n_tokens, n_cells)
    _check(lib.posenc_rope_out_slots(plan_used._ptr(), head_dim, n_tokens, _pointer(positions),
                                     start_pos, ctypes.byref(src_view),
                                     ctypes.byref(cache_view), ctypes.byref(cells), flags),
           "posenc_rope_out_slots")
    del index
    return cache


def _slot_views(src, cache, axes, cache_axes, src_dtype, cache_dtype, tokens=None):
    """The views of rope_out_slots' and rope_apply_slots' src (3-D, one batch) and cache
    (3-D cells, cache_axes "CHD" or "HCD"), checked as rope_out_slots documents. Returns
    (src_view, cache_view, (n_tokens, head_dim, n_cells))."""
    if src.ndim != 3 or cache.ndim != 3:
        raise ValueError(f"src and cache must be 3-D (one batch), got {src.ndim}-D and "
                         f"{cache.ndim}-D")
    cache_axes = "CHD" if cache_axes is None else cache_axes
    if cache_axes not in ("CHD", "HCD"):
        raise ValueError(f'cache_axes must be "CHD" or "HCD", got {cache_axes!r}')
    if not cache.flags.writeable:
        raise ValueError("cache is read-only; posenc writes into it")
    declared = None if src_dtype is None else _storage_type("src_dtype", src_dtype)
    src_code = _array_type("src", src, declared)
    axes = _axes(axes, src.shape, tokens)
    src_view, (_, n_tokens, n_heads, head_dim) = _view("src", src, src_code, axes, source=True)
    wanted = None if cache_dtype is None else _storage_type("cache_dtype", cache_dtype)
    cache_code = _array_type("cache", cache, wanted, prefer=src_code)
    cell_axes = cache_axes.replace("C", "L")
    cache_view, (_, n_cells, cache_heads, cache_dim) = _view("cache", cache, cache_code,
                                                             cell_axes, source=False)
    if (cache_heads, cache_dim) != (n_heads, head_dim):
        raise ValueError(f"cache has {cache_heads} heads of {cache_dim}; src {n_heads} of "
                         f"{head_dim}")
    return src_view, cache_view, (n_tokens, head_dim, n_cells)


def _slots_of(slots, n_tokens, n_cells):
    """A posenc_slots of a 1-D int32/int64 array of n_tokens cells, and the array."""
    index = np.asarray(slots)
    if index.dtype not in (np.dtype(np.int32), np.dtype(np.int64)) or index.ndim != 1:
        raise TypeError(f"slots must be a 1-D int32 or int64 array, got {index.dtype} "
                        f"{index.shape}")
    if index.shape[0] != n_tokens:
        raise ValueError(f"slots has {index.shape[0]} entries for {n_tokens} tokens")
    index = np.ascontiguousarray(index)
    return _lib.Slots(index.ctypes.data, 1 if index.dtype == np.int64 else 0, n_cells), index


def _quant_call(plan, src, dst, slots, positions, start_pos, axes, row_bytes):
    """The part rope_out_q8_0 and rope_out_fp8 share: src's view (a 3-D float32 array, one
    batch), dst (None: a new uint8 array [L, H, row_bytes(D)]; else checked: uint8 [rows, H,
    row_bytes(D)], writeable, last axis contiguous), the slots, positions and plan. Returns
    (dst, args): args are the C function's arguments from head_dim to dst's view, then the
    slots pointer, and a reference kept alive through the call."""
    _plan_handle(plan, RopePlan)
    if np.asarray(src).dtype != np.float32 or src.ndim != 3:
        raise TypeError(f"src must be a 3-D float32 array, got {np.asarray(src).dtype} "
                        f"{np.asarray(src).ndim}-D")
    axes = _axes(axes, src.shape, _tokens(positions))
    src_view, (_, n_tokens, n_heads, head_dim) = _view("src", src, _lib.DTYPE_F32, axes,
                                                       source=True)
    row = row_bytes(head_dim)
    if dst is None:
        if slots is not None:
            raise ValueError("slots need a dst (the cache they index)")
        dst = np.zeros((n_tokens, n_heads, row), np.uint8)
    if dst.dtype != np.uint8 or dst.ndim != 3 or dst.shape[1:] != (n_heads, row):
        raise ValueError(f"dst must be a uint8 array [rows, {n_heads}, {row}], got {dst.dtype} "
                         f"{dst.shape}")
    if not dst.flags.writeable:
        raise ValueError("dst is read-only; posenc writes into it")
    if dst.strides[2] != 1 or dst.strides[0] < 0 or dst.strides[1] < 0:
        raise ValueError(f"dst's last axis must be contiguous bytes (strides {dst.strides})")
    if slots is None and dst.shape[0] != n_tokens:
        raise ValueError(f"dst has {dst.shape[0]} rows for {n_tokens} tokens (pass slots to "
                         f"choose rows)")
    cells, keep = (None, None) if slots is None else _slots_of(slots, n_tokens, dst.shape[0])
    positions, start_pos = _positions(positions, n_tokens, start_pos, wide=True)
    plan_used = _resolve(plan, positions, start_pos, n_tokens)  # alive through the call
    dims = (dst.shape[0], n_heads, dst.strides[0], dst.strides[1])
    return dst, (plan_used, head_dim, n_tokens, _pointer(positions), start_pos,
                 ctypes.byref(src_view), dims, None if cells is None else ctypes.byref(cells),
                 (keep, positions, src_view))


def rope_out_q8_0(plan, src, dst=None, *, slots=None, positions=None, start_pos=0, axes=None,
                  layout=None, inverse=False, f32_angles=False, deterministic=False):
    """RoPE of an f32 source written as ggml q8_0 blocks, bit for bit ggml's
    quantize_row_q8_0_ref on rope_out's f32 result: posenc_rope_out_q8_0. Returns dst.

    src: float32, 3-D, one batch ([L, H, D] "LHD" by default, or axes="HLD"); D a multiple
    of 32. dst: None for a new uint8 array [L, H, D // 32 * 34] (each head vector D // 32
    blocks of 34 bytes: f16 scale, 32 int8), or a writeable uint8 array [rows, H, D // 32 *
    34] whose last axis is contiguous (its byte strides are the cache's). slots: None (token
    t into row t) or a 1-D int32/int64 array of rows (negative: skipped; rows < dst's first
    axis, none twice).
    """
    dst, (plan_used, head_dim, n_tokens, pos, start_pos, src_ref, dims, cells, keep) = \
        _quant_call(plan, src, dst, slots, positions, start_pos, axes, lambda d: d // 32 * 34)
    view = _lib.Q8View(_address(dst), *dims[1:])
    flags = _rope_flags(layout, inverse, f32_angles, plan=plan, deterministic=deterministic)
    flags |= _positions_flag(keep[1])
    _check(lib.posenc_rope_out_q8_0(plan_used._ptr(), head_dim, n_tokens, pos, start_pos,
                                    src_ref, ctypes.byref(view), cells, flags),
           "posenc_rope_out_q8_0")
    del keep
    return dst


def rope_out_fp8(plan, src, dst=None, *, scale, slots=None, positions=None, start_pos=0,
                 axes=None, layout=None, inverse=False, f32_angles=False, deterministic=False):
    """RoPE of an f32 source written as OCP FP8 E4M3 bytes (float8_e4m3fn), vLLM's fp8 K
    cache: posenc_rope_out_fp8. Each element is the E4M3 byte of float32(v / scale), v
    rope_out's f32 result, rounded to nearest even once, saturated to +-448 (infinities too),
    NaN as 0x7f (its sign is not portable), -0 as 0x80. Returns dst.

    src: float32, 3-D, one batch ([L, H, D] "LHD" by default, or axes="HLD"). dst: None for
    a new uint8 array [L, H, D], or a writeable uint8 (or torch.float8_e4m3fn) array
    [rows, H, D] whose last axis is contiguous (its byte strides are the cache's: vLLM's
    [num_blocks, block_size, H, D] reshaped to [num_blocks * block_size, H, D]). scale: the
    divisor (vLLM's k_scale), taken as float32, finite and > 0. slots: None (token t into row
    t) or a 1-D int32/int64 array of rows (vLLM's slot_mapping; negative: skipped; rows <
    dst's first axis, none twice).
    """
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.floating,
                                                                      np.integer)):
        raise TypeError(f"scale must be a real number, got {type(scale).__name__}")
    dst, (plan_used, head_dim, n_tokens, pos, start_pos, src_ref, dims, cells, keep) = \
        _quant_call(plan, src, dst, slots, positions, start_pos, axes, lambda d: d)
    view = _lib.Fp8View(_address(dst), *dims[1:])
    flags = _rope_flags(layout, inverse, f32_angles, plan=plan, deterministic=deterministic)
    flags |= _positions_flag(keep[1])
    _check(lib.posenc_rope_out_fp8(plan_used._ptr(), head_dim, n_tokens, pos, start_pos,
                                   src_ref, ctypes.byref(view), float(scale), cells, flags),
           "posenc_rope_out_fp8")
    del keep
    return dst


def _qk_norm(name, weight, eps, gemma, head_dim):
    """A posenc_qk_norm of weight (1-D, head_dim floating values, taken as float32) and the
    float32 copy that must stay alive through the call."""
    array = np.asarray(weight)
    if array.dtype.kind != "f":
        raise TypeError(f"{name} must hold floating values (float16, float32, float64), got "
                        f"{array.dtype}; bfloat16 weights: convert them to float32 first")
    if array.shape != (head_dim,):
        raise ValueError(f"{name} must have shape ({head_dim},) (head_dim), got {array.shape}")
    array = np.ascontiguousarray(array, dtype=np.float32)
    flags = _lib.QK_NORM_GEMMA if gemma else 0
    return _lib.QkNorm(array.ctypes.data, float(eps), flags), array


def rope_qknorm(plan, q, q_weight, *, eps, k=None, k_weight=None, gemma=False, q_dst=None,
                k_dst=None, positions=None, start_pos=0, axes=None, layout=None, inverse=False,
                f32_angles=False, deterministic=False, src_dtype=None, dst_dtype=None):
    """QK-norm and RoPE in one pass (Qwen3, Gemma 3, OLMo 2): every head vector x of q (and
    k) becomes rope(x * inv * w), inv = 1 / sqrt(mean(x^2) + eps), w = q_weight (k_weight
    for k; 1 + w with gemma=True): posenc_rope_qknorm. Returns q_dst, or (q_dst, k_dst)
    when k is given.

    q, k: arrays as rope_out's src (axes, storage types, broadcasting); k may have its own
    head count (GQA). q_weight, k_weight: 1-D, head_dim floating values (taken as float32;
    k_weight is required with k). eps: the norm's epsilon (required: models differ).
    q_dst, k_dst: None for new arrays (dst_dtype, as rope_out), a writeable array of the
    source's shape, or the source itself for in place. Both tensors take one type pair.
    positions, start_pos, layout, inverse, f32_angles, deterministic: as rope_out.
    The norm is computed in float (the sum of squares added in double) and not rounded to
    a 16-bit type before the weight, where HF's 16-bit models round it: see posenc.h.
    """
    _plan_handle(plan, RopePlan)
    if k is None and (k_weight is not None or k_dst is not None):
        raise ValueError("k_weight and k_dst need k")
    if k is not None and k_weight is None:
        raise ValueError("k_weight is required with k (the norm's weights for k)")
    tokens = _tokens(positions)
    q_dst, q_src_view, q_dst_view, (n_batch, n_tokens, _, head_dim) = _src_dst(
        q, q_dst, axes, src_dtype, dst_dtype, tokens)
    q_norm, q_keep = _qk_norm("q_weight", q_weight, eps, gemma, head_dim)
    k_args = (None, None, None)
    if k is not None:
        k_dst, k_src_view, k_dst_view, (k_batch, k_tokens, _, k_dim) = _src_dst(
            k, k_dst, axes, src_dtype, dst_dtype, tokens)
        if (k_batch, k_tokens, k_dim) != (n_batch, n_tokens, head_dim):
            raise ValueError(f"k has {k_batch} batches of {k_tokens} tokens of head_dim {k_dim}; "
                             f"q has {n_batch} of {n_tokens} of {head_dim}")
        k_norm, k_keep = _qk_norm("k_weight", k_weight, eps, gemma, head_dim)
        k_args = (ctypes.byref(k_src_view), ctypes.byref(k_dst_view), ctypes.byref(k_norm))
    positions, start_pos = _batch_positions(positions, n_batch, n_tokens, start_pos)
    plan_used = _resolve(plan, positions, start_pos, n_tokens)  # alive through the call
    flags = _rope_flags(layout, inverse, f32_angles, plan=plan, deterministic=deterministic)
    flags |= _positions_flag(positions)
    _check(lib.posenc_rope_qknorm(plan_used._ptr(), head_dim, n_batch, n_tokens,
                                  _pointer(positions), start_pos, ctypes.byref(q_src_view),
                                  ctypes.byref(q_dst_view), ctypes.byref(q_norm), *k_args,
                                  flags),
           "posenc_rope_qknorm")
    del q_keep
    if k is None:
        return q_dst
    del k_keep
    return q_dst, k_dst


def mrope_out(plan, sections, src, *, dst=None, positions=None, axes=None, layout=None,
              interleaved=None, ggml=None, inverse=False, f32_angles=False, deterministic=False,
              src_dtype=None, dst_dtype=None):
    """Out-of-place M-RoPE over a batch: posenc_mrope_out. Returns dst.

    src, dst, axes, src_dtype, dst_dtype: as for rope_out(). sections, interleaved, layout,
    ggml, inverse, f32_angles, deterministic: as for mrope(). positions: integers of shape
    (3, B, L), HF's position_ids (rows temporal, height, width), or (3, L) for every batch
    (4 rows with ggml's rule).
    """
    _plan_handle(plan, RopePlan)
    interleaved, ggml = _mrope_rule(plan, interleaved, ggml)
    rows = 4 if ggml else 3
    dst, src_view, dst_view, (n_batch, n_tokens, _, head_dim) = _src_dst(
        src, dst, axes, src_dtype, dst_dtype, _tokens(positions, mrope=rows))
    flat = _mrope_positions(positions, n_batch, n_tokens, rows)
    plan_used = _resolve(plan, flat, 0, n_tokens)  # alive through the call
    handle = plan_used._ptr()
    sec_array = _sections(sections, ggml)
    flags = _rope_flags(layout, inverse, f32_angles, interleaved, plan=plan,
                        deterministic=deterministic, ggml=ggml) | _positions_flag(flat)
    _check(lib.posenc_mrope_out(handle, sec_array, head_dim, n_batch, n_tokens, _pointer(flat),
                                ctypes.byref(src_view), ctypes.byref(dst_view), flags),
           "posenc_mrope_out")
    return dst
