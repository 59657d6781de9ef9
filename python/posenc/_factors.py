"""Rotation factors: computed once (rope_factors, mrope_factors), applied to every layer
(rope_apply)."""

import ctypes

import numpy as np

from . import _lib
from ._lib import lib
from ._core import (_F32, _address, _check, _plan_handle, _pointer, _positions,
                    _positions_flag, _size)
from ._plans import RopePlan, _resolve
from ._rope import _mrope_rule, _rope_flags, _sections, _slot_views, _slots_of, _src_dst


def _aligned_float32(nbytes, alignment=64):
    """A new float32 array of nbytes bytes (a multiple of 4) starting on an `alignment`-byte
    boundary (cache lines; the C library needs only float alignment)."""
    raw = np.empty(nbytes + alignment, np.uint8)
    offset = -raw.ctypes.data % alignment
    return raw[offset:offset + nbytes].view(np.float32)


def _factor_storage(rotary_dim, n_rows, flags, storage):
    """(float32 array, its size in bytes) to hold n_rows rows of factors made with `flags`,
    the computation's own: the C library's one flag rule for the factor path takes the same
    flags for the size (posenc_rope_factors_bytes), so they are passed as they are."""
    if storage is None:
        need = lib.posenc_rope_factors_bytes(rotary_dim, n_rows, flags)
        if need == 0 and n_rows > 0:
            raise ValueError(f"{n_rows} rows of factors for rotary_dim {rotary_dim} overflow "
                             "size_t")
        return _aligned_float32(need), need
    if not isinstance(storage, np.ndarray) or storage.dtype != _F32:
        raise TypeError("storage must be a numpy.ndarray of float32")
    if not storage.flags.c_contiguous or not storage.flags.writeable:
        raise ValueError("storage must be C-contiguous and writeable")
    return storage, storage.nbytes


class RopeFactors:
    """Rotation factors: the cos/sin (times the plan's attention factor) of n_rows
    positions, made once by rope_factors() / mrope_factors() and applied by rope_apply() to
    the Q and K of every layer with no sin/cos and no plan (posenc_rope_factors). Owns (or
    holds) the float32 storage; n_rows, rotary_dim, row_floats and layout describe it; the
    row layout is the kernels' own (opaque). rows(first, count) is a sub-range sharing the
    storage."""

    def __init__(self):
        raise TypeError("RopeFactors are made by posenc.rope_factors() or posenc.mrope_factors()")

    @classmethod
    def _make(cls, struct, storage, f32_angles):
        factors = cls.__new__(cls)
        factors._struct = struct
        factors._storage = storage  # keeps struct.data alive
        factors._f32_angles = f32_angles
        return factors

    @property
    def n_rows(self):
        return self._struct.n_rows

    @property
    def rotary_dim(self):
        return self._struct.rotary_dim

    @property
    def row_floats(self):
        """Floats per row (the C struct's row_floats)."""
        return self._struct.row_floats

    @property
    def layout(self):
        """The pair layout the factors were made for, "neox" or "gptj"; rope_apply uses it."""
        return "gptj" if self._struct.flags & _lib.ROPE_GPTJ else "neox"

    @property
    def f32_angles(self):
        return self._f32_angles

    @property
    def deterministic(self):
        """Whether the factors were made with POSENC_ROPE_DETERMINISTIC (rope_apply then
        rotates bitwise alike on every ISA and CPU)."""
        return bool(self._struct.flags & _lib.ROPE_DETERMINISTIC)

    @property
    def storage(self):
        """The float32 array that holds the rows (its beginning may precede row 0 of a
        sub-range)."""
        return self._storage

    def __len__(self):
        return self.n_rows

    def rows(self, first, count=None):
        """Rows [first, first + count) (count None: to the end) as RopeFactors sharing this
        storage (the C struct with data moved on by whole rows)."""
        first = _size("first", first)
        if first > self.n_rows:
            raise ValueError(f"first = {first} is past the {self.n_rows} rows")
        count = self.n_rows - first if count is None else _size("count", count)
        if count > self.n_rows - first:
            raise ValueError(f"rows [{first}, {first + count}) are not within the "
                             f"{self.n_rows} rows")
        data = (self._struct.data or 0) + first * self.row_floats * _F32.itemsize
        struct = _lib.RopeFactors(data if count else self._struct.data, count,
                                  self.rotary_dim, self.row_floats, self._struct.flags)
        return RopeFactors._make(struct, self._storage, self._f32_angles)

    def __repr__(self):
        return (f"RopeFactors(n_rows={self.n_rows}, rotary_dim={self.rotary_dim}, "
                f"layout={self.layout!r}, f32_angles={self.f32_angles})")


def rope_factors(plan, *, positions=None, start_pos=0, n_rows=None, layout=None,
                 f32_angles=False, deterministic=False, storage=None):
    """Computes the rotation factors of n_rows positions: posenc_rope_factors_compute.
    Returns a RopeFactors.

    positions: integers, 1-D (row r at positions[r]) or [B, L] (flattened row-major: row
    b * L + t, what rope_apply's default row_batch_stride = L reads for token t of batch b);
    or None with n_rows for the run start_pos + r. layout: "neox" or "gptj", fixed for
    applying. f32_angles: POSENC_ROPE_F32_ANGLES (inverse is chosen when applying).
    deterministic: POSENC_ROPE_DETERMINISTIC (rope_apply then applies them as such). The
    factors are exactly those rope() uses, so applying them gives bitwise rope_out()'s result.
    storage: None (new, cache-line aligned) or a C-contiguous writeable float32 array to
    reuse (its bytes must cover posenc_rope_factors_bytes, else PosencError).
    """
    _plan_handle(plan, RopePlan)
    if positions is None:
        if n_rows is None:
            raise ValueError("pass positions, or n_rows (with start_pos)")
        n_rows = _size("n_rows", n_rows)
        pos, start_pos = _positions(None, n_rows, start_pos)
    else:
        array = np.asarray(positions)
        if array.ndim == 2:
            array = array.reshape(-1)
        pos, start_pos = _positions(array, None if n_rows is None else _size("n_rows", n_rows),
                                    start_pos, wide=True)
        n_rows = pos.shape[0]
    plan_used = _resolve(plan, pos, start_pos, n_rows)  # alive through the call
    handle = plan_used._ptr()
    flags = _rope_flags(layout, f32_angles=f32_angles, plan=plan, deterministic=deterministic)
    storage, nbytes = _factor_storage(plan.rotary_dim, n_rows, flags, storage)
    struct = _lib.RopeFactors()
    _check(lib.posenc_rope_factors_compute(handle, n_rows, _pointer(pos), start_pos,
                                           flags | _positions_flag(pos), _address(storage),
                                           nbytes, ctypes.byref(struct)),
           "posenc_rope_factors_compute")
    return RopeFactors._make(struct, storage, bool(f32_angles))


def mrope_factors(plan, sections, *, positions, layout=None, interleaved=None, ggml=None,
                  f32_angles=False, deterministic=False, storage=None):
    """The M-RoPE rotation factors: posenc_mrope_factors_compute. Returns a RopeFactors.

    positions: integers of shape (3, n_rows) (rows temporal, height, width), or HF's
    position_ids (3, B, L), row b * L + t (4 rows with ggml's rule). sections, interleaved,
    ggml: as for mrope(); layout, f32_angles, deterministic, storage: as for rope_factors().
    """
    _plan_handle(plan, RopePlan)
    interleaved, ggml = _mrope_rule(plan, interleaved, ggml)
    rows = 4 if ggml else 3
    array = np.asarray(positions)
    if array.ndim not in (2, 3) or array.shape[0] != rows:
        raise ValueError(f"positions must have shape ({rows}, n_rows) or ({rows}, B, L), got "
                         f"{array.shape}")
    array = array.reshape(rows, -1)
    n_rows = array.shape[1]
    flat, _ = _positions(array.reshape(-1), rows * n_rows, 0, wide=True)
    plan_used = _resolve(plan, flat, 0, n_rows)  # alive through the call
    handle = plan_used._ptr()
    sec_array = _sections(sections, ggml)
    flags = _rope_flags(layout, f32_angles=f32_angles, interleaved=interleaved, plan=plan,
                        deterministic=deterministic, ggml=ggml)
    storage, nbytes = _factor_storage(plan.rotary_dim, n_rows, flags, storage)
    struct = _lib.RopeFactors()
    _check(lib.posenc_mrope_factors_compute(handle, sec_array, n_rows, _pointer(flat),
                                            flags | _positions_flag(flat), _address(storage),
                                            nbytes, ctypes.byref(struct)),
           "posenc_mrope_factors_compute")
    return RopeFactors._make(struct, storage, bool(f32_angles))


def rope_apply(factors, src, *, dst=None, first_row=0, row_batch_stride=None, axes=None,
               inverse=False, src_dtype=None, dst_dtype=None):
    """Applies rotation factors to a batch, out of place or in place (dst is src):
    posenc_rope_apply. Returns dst. Also available as posenc.apply.

    factors: a RopeFactors (its layout is the pair layout). Token t of batch b takes row
    first_row + b * row_batch_stride + t; row_batch_stride None means L (one row per token
    of every sequence, as rope_factors() lays out [B, L] positions), 0 every batch at the
    same positions. Rows past factors.n_rows are refused (PosencError). src, dst, axes,
    src_dtype, dst_dtype: as for rope_out(), but a 4-D src always needs axes (no positions
    here tell its token axis); inverse: rotate by -angle.
    """
    if not isinstance(factors, RopeFactors):
        raise TypeError(f"factors must be a posenc.RopeFactors, not {type(factors).__name__}")
    dst, src_view, dst_view, (n_batch, n_tokens, _, head_dim) = _src_dst(
        src, dst, axes, src_dtype, dst_dtype)
    first_row = _size("first_row", first_row)
    row_batch_stride = n_tokens if row_batch_stride is None else _size("row_batch_stride",
                                                                       row_batch_stride)
    flags = factors._struct.flags | (_lib.ROPE_INVERSE if inverse else 0)
    _check(lib.posenc_rope_apply(ctypes.byref(factors._struct), first_row, row_batch_stride,
                                 head_dim, n_batch, n_tokens, ctypes.byref(src_view),
                                 ctypes.byref(dst_view), flags),
           "posenc_rope_apply")
    return dst


def rope_apply_slots(factors, src, cache, slots, *, first_row=0, axes=None, cache_axes=None,
                     inverse=False, src_dtype=None, cache_dtype=None):
    """Applies rotation factors to src's tokens and writes them into the cache cells `slots`
    chooses: posenc_rope_apply_slots. Token t takes factor row first_row + t and goes to cell
    slots[t], or nowhere where slots[t] < 0. Returns cache.

    factors, first_row, inverse: as for rope_apply() (one batch). src, cache, slots, axes,
    cache_axes, src_dtype, cache_dtype: as for rope_out_slots(). Each written cell is bitwise
    rope_out_slots()'s with the plan and positions the factors were computed from; every other
    element of the cache is untouched. Bad cells or factor rows are refused before anything
    is written (PosencError).
    """
    if not isinstance(factors, RopeFactors):
        raise TypeError(f"factors must be a posenc.RopeFactors, not {type(factors).__name__}")
    src_view, cache_view, (n_tokens, head_dim, n_cells) = _slot_views(
        src, cache, axes, cache_axes, src_dtype, cache_dtype)
    first_row = _size("first_row", first_row)
    flags = factors._struct.flags | (_lib.ROPE_INVERSE if inverse else 0)
    cells, index = _slots_of(slots, n_tokens, n_cells)
    _check(lib.posenc_rope_apply_slots(ctypes.byref(factors._struct), first_row, head_dim,
                                       n_tokens, ctypes.byref(src_view),
                                       ctypes.byref(cache_view), ctypes.byref(cells), flags),
           "posenc_rope_apply_slots")
    del index
    return cache


apply = rope_apply
