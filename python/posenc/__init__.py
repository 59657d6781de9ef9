"""posenc: SIMD kernels for transformer positional encodings, on NumPy arrays.

A thin ctypes layer over the C library (include/posenc.h is the contract). Data arrays are
never copied: every function works on the caller's float32 memory, in place, or writes into
a new (or given) float32 array. Small parameter arrays (positions, timesteps, slopes,
frequencies) are converted to the C types when needed. Sizes and strides are taken from the
arrays; the C functions get strides in elements, so every stride must be a whole number of
elements and the last axis must be contiguous.

Errors: TypeError for a wrong type or dtype, ValueError for bad shapes, strides, non-writeable
or misaligned arrays and out-of-range arguments, and PosencError (a ValueError) carrying the
C status and its string when a C function returns anything but POSENC_OK (nothing has been
written then). The C calls release the GIL (ctypes), so threads can run kernels at once on
disjoint arrays.
"""

import ctypes
import operator

import numpy as np

from . import _lib
from ._lib import lib

__all__ = [
    "PosencError", "version", "active_isa", "set_isa", "all_isas", "available_isas",
    "compiled_isas",
    "cpu_name", "cpu_features", "library_path", "RopePlan", "rope", "mrope", "rope_rerotate",
    "SinusoidPlan",
    "sinusoid_fill", "sinusoid_fill_timesteps", "sinusoid_add", "alibi_slopes", "alibi_add",
    "alibi_bias", "learned_add",
]

_SIZE_MAX = 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1
_INT32_MIN, _INT32_MAX = -2 ** 31, 2 ** 31 - 1
_F32 = np.dtype(np.float32)


class PosencError(ValueError):
    """A C function returned a status other than POSENC_OK. `status` is the posenc_status
    value, `status_string` its posenc_status_string()."""

    def __init__(self, function, status):
        self.function = function
        self.status = status
        self.status_string = lib.posenc_status_string(status).decode()
        super().__init__(f"{function}: {self.status_string}")


class PosencMemoryError(PosencError, MemoryError):
    """POSENC_ERR_OUT_OF_MEMORY (plan creation)."""


def _check(status, function):
    if status == _lib.POSENC_ERR_OUT_OF_MEMORY:
        raise PosencMemoryError(function, status)
    if status != _lib.POSENC_OK:
        raise PosencError(function, status)


# --- argument conversion ------------------------------------------------------------------

def _int(name, value, low, high):
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} = {value} is outside [{low}, {high}]")
    return value


def _size(name, value):
    return _int(name, value, 0, _SIZE_MAX)


def _int32(name, value):
    return _int(name, value, _INT32_MIN, _INT32_MAX)


def _float(name, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}") from None


def _array(name, array, ndim, writeable):
    """Checks a float32 data array (never copied) and returns its strides in elements, with
    the stride of an axis of length 1 (or of an empty array) replaced by the one a C-order
    layout would have: such a stride is never used, and the C checks must not trip on it."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float32, not {type(array).__name__}")
    if array.dtype != _F32:
        raise TypeError(f"{name} must have dtype float32 (native byte order), not {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {array.shape}")
    if writeable and not array.flags.writeable:
        raise ValueError(f"{name} is read-only; posenc writes into it in place")
    strides = [0] * ndim
    inner = 1  # the C-order stride of axis i + 1 times its length
    for axis in reversed(range(ndim)):
        length, stride = array.shape[axis], array.strides[axis]
        if array.size == 0 or length == 1:
            strides[axis] = inner
        elif stride <= 0 or stride % _F32.itemsize:
            raise ValueError(
                f"{name}: stride {stride} bytes on axis {axis} is not a positive whole number "
                "of float32 elements (negative, zero/broadcast and byte strides are not "
                "supported); pass a copy")
        else:
            strides[axis] = stride // _F32.itemsize
        inner = strides[axis] * array.shape[axis]
    if array.size and ndim and array.shape[-1] > 1 and strides[-1] != 1:
        raise ValueError(f"{name}: the last axis must be contiguous (element stride 1), got "
                         f"{strides[-1]}")
    if array.size and not array.flags.aligned:
        raise ValueError(f"{name} is not aligned to float32 elements")
    return strides


def _address(array):
    return array.ctypes.data


def _positions(positions, n_tokens, start_pos):
    """Returns (int32 array or None, start_pos). Positions of another integer dtype are
    converted after a range check; the int32 array is kept alive by the caller. n_tokens:
    the length the positions must have, None for any."""
    start_pos = _int32("start_pos", start_pos)
    if positions is None:
        return None, start_pos
    if start_pos != 0:
        raise ValueError("pass either positions or start_pos, not both")
    array = np.asarray(positions)
    if array.size == 0 and array.dtype.kind == "f":
        array = array.astype(np.int32)  # np.asarray([]) is float64
    if array.dtype.kind not in "iu":
        raise TypeError(f"positions must be integers (int32), not {array.dtype}")
    if array.ndim != 1 or (n_tokens is not None and array.shape[0] != n_tokens):
        entries = "" if n_tokens is None else f" with {n_tokens} entries"
        raise ValueError(f"positions must be 1-D{entries}, got shape {array.shape}")
    if array.dtype != np.int32:
        if array.size and (int(array.min()) < _INT32_MIN or int(array.max()) > _INT32_MAX):
            raise ValueError("positions outside the int32 range")
        array = array.astype(np.int32)
    return np.ascontiguousarray(array), 0


def _real_vector(name, values, dtype, length=None):
    array = np.asarray(values)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers, not {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if length is not None and array.shape[0] != length:
        raise ValueError(f"{name} must have {length} entries, got {array.shape[0]}")
    return np.ascontiguousarray(array, dtype=dtype)


def _pointer(array):
    return None if array is None else _address(array)


# --- library and dispatch -----------------------------------------------------------------

def version():
    """The linked library's version, "MAJOR.MINOR.PATCH" (posenc_version)."""
    return lib.posenc_version().decode()


def library_path():
    """The path libposenc was loaded from."""
    return _lib.path


def _isa_name(isa):
    return lib.posenc_isa_name(isa).decode()


def all_isas():
    """Names of every ISA posenc knows, in the order of the C header's posenc_isa enum (the
    library's one ISA list: posenc_isa_name answers "unknown" past its last entry)."""
    names = []
    while _isa_name(len(names)) != "unknown":
        names.append(_isa_name(len(names)))
    return names


def active_isa():
    """The name of the ISA whose variants the kernels use now (posenc_active_isa +
    posenc_isa_name): "scalar", "sse4", "avx2", "avx512" or "neon"."""
    return _isa_name(lib.posenc_active_isa())


def set_isa(name):
    """Makes the ISA called `name` the active one (posenc_isa_from_name + posenc_set_isa).
    ValueError for an unknown name; PosencError ("unsupported") if this build or CPU lacks it,
    in which case nothing changes. Affects every thread of the process."""
    if not isinstance(name, str):
        raise TypeError(f"ISA name must be a str, not {type(name).__name__}")
    isa = ctypes.c_int()
    if lib.posenc_isa_from_name(name.encode(), ctypes.byref(isa)) != _lib.POSENC_OK:
        names = ", ".join(all_isas())
        raise ValueError(f"unknown ISA {name!r} (one of {names})")
    _check(lib.posenc_set_isa(isa.value), f"posenc_set_isa({name})")


def available_isas():
    """Names of the ISAs compiled in that this CPU and OS can run, scalar first
    (posenc_isa_available)."""
    return [name for i, name in enumerate(all_isas()) if lib.posenc_isa_available(i)]


def compiled_isas():
    """Names of the ISAs whose variants this build contains (posenc_isa_compiled)."""
    return [name for i, name in enumerate(all_isas()) if lib.posenc_isa_compiled(i)]


def cpu_name():
    """The CPU's brand string, "unknown" where it gives none (posenc_cpu_name)."""
    return lib.posenc_cpu_name().decode()


def cpu_features():
    """The CPU/OS features the dispatcher looks at, space-separated (posenc_cpu_features)."""
    return lib.posenc_cpu_features().decode()


# --- plans --------------------------------------------------------------------------------

class _Plan:
    _destroy = None

    def __init__(self):
        self._handle = None

    def _adopt(self, create, function, *args):
        handle = ctypes.c_void_p()
        _check(create(ctypes.byref(handle), *args), function)
        self._handle = handle

    def _ptr(self):
        if self._handle is None:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._handle

    def close(self):
        """Frees the C plan now (otherwise when the object is collected)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            type(self)._destroy(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def _plan_handle(plan, cls):
    if not isinstance(plan, cls):
        raise TypeError(f"plan must be a posenc.{cls.__name__}, not {type(plan).__name__}")
    return plan._ptr()


class RopePlan(_Plan):
    """A RoPE frequency plan: rotary_dim / 2 frequencies (double) and an attention factor.

    RopePlan(rotary_dim, base=10000.0, attention_factor=1.0) is posenc_rope_plan_create:
    w_i = base^(-2i/rotary_dim), i in [0, rotary_dim/2). rotary_dim: even, 2 .. 2^20;
    base: finite, > 0, != 1; attention_factor: finite, > 0 (multiplies cos and sin).
    Immutable and shareable between threads.
    """

    _destroy = staticmethod(lib.posenc_rope_plan_destroy)

    def __init__(self, rotary_dim, base=10000.0, attention_factor=1.0):
        super().__init__()
        self._adopt(lib.posenc_rope_plan_create, "posenc_rope_plan_create",
                    _size("rotary_dim", rotary_dim), _float("base", base),
                    _float("attention_factor", attention_factor))

    @classmethod
    def from_freqs(cls, freqs, attention_factor=1.0):
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
        False sets no_truncate; "rope_theta" and "partial_rotary_factor" are ignored (pass
        base and rotary_dim). The keyword arguments come from the model config rather than
        the dict (Phi-3 keeps original_max_position_embeddings outside it) or from the
        sequence: seq_len = largest position + 1 for "dynamic" and "longrope"."""
        scaling = dict(rope_scaling or {})
        kind = scaling.pop("rope_type", scaling.pop("type", "default"))
        if kind not in _lib.ROPE_SCALING_TYPES:
            raise ValueError(f"unknown rope_type {kind!r}")
        c = _lib.RopeScaling(type=_lib.ROPE_SCALING_TYPES[kind])
        c.max_position_embeddings = _size("max_position_embeddings", max_position_embeddings)
        c.original_max_position_embeddings = _size("original_max_position_embeddings",
                                                   original_max_position_embeddings)
        c.seq_len = _size("seq_len", seq_len)
        keep = []  # factor arrays, alive until the call returns
        for key, value in scaling.items():
            if key in ("rope_theta", "partial_rotary_factor"):
                continue
            if key == "truncate":
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
                raise ValueError(f"unknown rope_scaling key {key!r}")
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_scaled, "posenc_rope_plan_create_scaled",
                    _size("rotary_dim", rotary_dim), _float("base", base), ctypes.byref(c))
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


_ROPE_LAYOUTS = {"neox": 0, "gptj": _lib.ROPE_GPTJ}
_SINUSOID_LAYOUTS = {"interleaved": 0, "sin_cos": _lib.SINUSOID_SIN_COS,
                     "cos_sin": _lib.SINUSOID_COS_SIN}


def _layout(layout, table):
    key = layout.lower().replace("-", "_") if isinstance(layout, str) else None
    if key not in table:
        raise ValueError(f"layout must be one of {', '.join(map(repr, table))}, not {layout!r}")
    return table[key]


def _rope_view(name, array):
    token_stride, head_stride, _ = _array(name, array, 3, writeable=True)
    return _lib.RopeTensor(_address(array), array.shape[1], token_stride, head_stride)


def _qk_views(q, k):
    """The RopeTensor views of q and k (None when k is None); k must match q's tokens and
    head_dim."""
    q_view = _rope_view("q", q)
    if k is None:
        return q_view, None
    k_view = _rope_view("k", k)
    if k.shape[0] != q.shape[0] or k.shape[2] != q.shape[2]:
        raise ValueError(f"k {k.shape} must have the tokens and head_dim of q {q.shape}")
    return q_view, k_view


def rope(plan, q, k=None, positions=None, start_pos=0, layout="neox", inverse=False,
         f32_angles=False):
    """Rotates q (and k) in place: posenc_rope_f32.

    q, k: float32 arrays [L, H, D] (k may have its own head count, GQA/MQA), or any 3-D
    view indexed [token, head, element] whose strides are whole elements with the last axis
    contiguous ([H, L, D] storage as x.transpose(1, 0, 2), rows of a packed QKV buffer).
    The first plan.rotary_dim elements of each head vector are rotated; the rest is kept.
    positions: L integer positions (converted to int32 after a range check), or None for
    start_pos + t. layout: "neox" (pairs (x[i], x[i + R/2])) or "gptj" (pairs (x[2i],
    x[2i+1])). inverse: rotate by -angle (POSENC_ROPE_INVERSE). f32_angles: the float32
    angle recipe of most reference code (POSENC_ROPE_F32_ANGLES). Returns None.
    """
    handle = _plan_handle(plan, RopePlan)
    q_view, k_view = _qk_views(q, k)
    n_tokens, _, head_dim = q.shape
    positions, start_pos = _positions(positions, n_tokens, start_pos)
    flags = _layout(layout, _ROPE_LAYOUTS)
    flags |= _lib.ROPE_INVERSE if inverse else 0
    flags |= _lib.ROPE_F32_ANGLES if f32_angles else 0
    _check(lib.posenc_rope_f32(handle, head_dim, n_tokens, _pointer(positions), start_pos,
                               ctypes.byref(q_view),
                               None if k_view is None else ctypes.byref(k_view), flags),
           "posenc_rope_f32")


def mrope(plan, sections, q, k=None, positions=None, layout="neox", interleaved=False,
          inverse=False, f32_angles=False):
    """Multimodal RoPE (Qwen2-VL; Qwen3-VL with interleaved=True) in place: posenc_mrope_f32.

    q, k: as for rope(). positions: integers of shape (3, L), HF's position_ids (3, batch,
    seq) for one sequence: rows temporal, height, width. sections: HF's mrope_section, three
    pair counts summing to plan.rotary_dim / 2. Pair i takes its angle from the row its
    section says (contiguous sections, or interleaved: height if i % 3 == 1 and
    i < 3 * sections[1], width if i % 3 == 2 and i < 3 * sections[2], else temporal); the
    rest is rope(). Returns None.
    """
    handle = _plan_handle(plan, RopePlan)
    q_view, k_view = _qk_views(q, k)
    n_tokens, _, head_dim = q.shape
    rows = np.asarray(positions if positions is not None else np.zeros((3, 0), np.int32))
    if rows.ndim != 2 or rows.shape != (3, n_tokens):
        raise ValueError(f"positions must have shape (3, {n_tokens}), got {rows.shape}")
    flat, _ = _positions(rows.reshape(-1), 3 * n_tokens, 0)
    sec = [int(x) for x in sections]
    if len(sec) != 3 or min(sec) < 0:
        raise ValueError(f"sections must be three pair counts >= 0, got {sections!r}")
    sec_array = (ctypes.c_size_t * 3)(*sec)
    flags = _layout(layout, _ROPE_LAYOUTS)
    flags |= _lib.ROPE_MROPE_INTERLEAVED if interleaved else 0
    flags |= _lib.ROPE_INVERSE if inverse else 0
    flags |= _lib.ROPE_F32_ANGLES if f32_angles else 0
    _check(lib.posenc_mrope_f32(handle, sec_array, head_dim, n_tokens, _pointer(flat),
                                ctypes.byref(q_view),
                                None if k_view is None else ctypes.byref(k_view), flags),
           "posenc_mrope_f32")


def rope_rerotate(from_plan, to_plan, k, from_positions=None, from_start=0, to_positions=None,
                  to_start=0, layout="neox", f32_angles=False):
    """Re-rotates cached keys in place in one pass: posenc_rope_rerotate_f32.

    k: float32 [L, H, D] (as for rope()) holding keys rotated by (from_plan, position p_t);
    afterwards they are rotated by (to_plan, p'_t): each pair by p'_t w'_i - p_t w_i, scaled
    by to_plan.attention_factor / from_plan.attention_factor. Positions: L integers, or None
    for a run from *_start. Returns None.
    """
    from_handle = _plan_handle(from_plan, RopePlan)
    to_handle = _plan_handle(to_plan, RopePlan)
    k_view = _rope_view("k", k)
    n_tokens, _, head_dim = k.shape
    from_pos, from_start = _positions(from_positions, n_tokens, from_start)
    to_pos, to_start = _positions(to_positions, n_tokens, to_start)
    flags = _layout(layout, _ROPE_LAYOUTS)
    flags |= _lib.ROPE_F32_ANGLES if f32_angles else 0
    _check(lib.posenc_rope_rerotate_f32(from_handle, _pointer(from_pos), from_start, to_handle,
                                        _pointer(to_pos), to_start, head_dim, n_tokens,
                                        ctypes.byref(k_view), flags),
           "posenc_rope_rerotate_f32")


# --- sinusoidal ---------------------------------------------------------------------------

class SinusoidPlan(_Plan):
    """A sinusoidal plan: the width d and ceil(d/2) frequencies.

    SinusoidPlan(dim, base=10000.0) is posenc_sinusoid_plan_create: w_i = base^(-2i/d).
    dim: 1 .. 2^20; base: finite, > 0, != 1 (diffusers calls it max_period).
    """

    _destroy = staticmethod(lib.posenc_sinusoid_plan_destroy)

    def __init__(self, dim, base=10000.0):
        super().__init__()
        self._adopt(lib.posenc_sinusoid_plan_create, "posenc_sinusoid_plan_create",
                    _size("dim", dim), _float("base", base))

    @classmethod
    def from_freqs(cls, freqs, dim=None):
        """A plan from ceil(dim/2) given frequencies (radians per position, finite):
        posenc_sinusoid_plan_create_from_freqs. dim defaults to 2 * len(freqs); an odd dim
        takes (dim + 1) / 2 frequencies, the last one giving only a sin column."""
        freqs = _real_vector("freqs", freqs, np.float64)
        dim = 2 * freqs.shape[0] if dim is None else _size("dim", dim)
        if (dim + 1) // 2 != freqs.shape[0]:
            raise ValueError(f"dim {dim} takes {(dim + 1) // 2} frequencies, got "
                             f"{freqs.shape[0]}")
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_sinusoid_plan_create_from_freqs,
                    "posenc_sinusoid_plan_create_from_freqs", dim, _address(freqs))
        return plan

    @property
    def dim(self):
        """The row width d (posenc_sinusoid_plan_dim)."""
        return lib.posenc_sinusoid_plan_dim(self._ptr())

    @property
    def freqs(self):
        """A new float64 array of the ceil(d/2) frequencies (posenc_sinusoid_plan_freqs)."""
        out = np.empty((self.dim + 1) // 2, np.float64)
        _check(lib.posenc_sinusoid_plan_freqs(self._ptr(), _address(out)),
               "posenc_sinusoid_plan_freqs")
        return out

    def __repr__(self):
        return "SinusoidPlan(<closed>)" if self._handle is None else f"SinusoidPlan(dim={self.dim})"


def _sinusoid_flags(layout, f32_angles):
    return _layout(layout, _SINUSOID_LAYOUTS) | (_lib.SINUSOID_F32_ANGLES if f32_angles else 0)


def _rows(name, array, n_rows, dim, writeable):
    """A [n_rows, dim] float32 view; returns its row stride in elements."""
    row_stride, _ = _array(name, array, 2, writeable)
    if array.shape != (n_rows, dim):
        raise ValueError(f"{name} must have shape ({n_rows}, {dim}), got {array.shape}")
    return row_stride


def _table_out(out, n_rows, dim):
    if out is None:
        out = np.empty((n_rows, dim), np.float32)
    return out, _rows("out", out, n_rows, dim, writeable=True)


def sinusoid_fill(plan, rows, start_pos=0, layout="interleaved", f32_angles=False, out=None):
    """Writes sinusoidal encodings: posenc_sinusoid_fill_f32. Returns out.

    rows: a number of rows n (positions start_pos .. start_pos + n - 1; seed 000's
    forward(n, offset) is start_pos=offset) or an array of n integer positions. out: None
    for a new [n, d] float32 array, or a writeable [n, d] float32 view (rows may be strided;
    elements between rows are untouched). layout: "interleaved" (sin, cos, sin, ...),
    "sin_cos" or "cos_sin". f32_angles: POSENC_SINUSOID_F32_ANGLES.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    if isinstance(rows, (int, np.integer)):
        n_rows = _size("rows", rows)
        positions, start_pos = _positions(None, n_rows, start_pos)
    else:
        positions, start_pos = _positions(rows, None, start_pos)
        n_rows = positions.shape[0]
    flags = _sinusoid_flags(layout, f32_angles)
    out, row_stride = _table_out(out, n_rows, plan.dim)
    _check(lib.posenc_sinusoid_fill_f32(handle, n_rows, _pointer(positions), start_pos,
                                        _address(out), row_stride, flags),
           "posenc_sinusoid_fill_f32")
    return out


def sinusoid_fill_timesteps(plan, timesteps, layout="interleaved", f32_angles=False, out=None):
    """Writes the encodings of float positions (diffusion timesteps):
    posenc_sinusoid_fill_timesteps_f32. Returns out.

    timesteps: n real numbers, used as float32 (converted if given in another real dtype);
    each finite with |t| < 2^31. out, layout, f32_angles: as for sinusoid_fill.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    timesteps = _real_vector("timesteps", timesteps, np.float32)
    flags = _sinusoid_flags(layout, f32_angles)
    out, row_stride = _table_out(out, timesteps.shape[0], plan.dim)
    _check(lib.posenc_sinusoid_fill_timesteps_f32(handle, timesteps.shape[0],
                                                  _address(timesteps), _address(out),
                                                  row_stride, flags),
           "posenc_sinusoid_fill_timesteps_f32")
    return out


def sinusoid_add(plan, x, positions=None, start_pos=0, layout="interleaved", f32_angles=False):
    """Adds the encoding into embeddings in place, x[r] += PE(position of row r), without a
    table (seeds 003/004): posenc_sinusoid_add_f32. Returns None.

    x: a writeable float32 [L, d] view (d = plan.dim; rows may be strided). positions: L
    integer positions, or None for start_pos + r. layout, f32_angles: as for sinusoid_fill.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    _array("x", x, 2, writeable=True)
    row_stride = _rows("x", x, x.shape[0], plan.dim, writeable=True)
    positions, start_pos = _positions(positions, x.shape[0], start_pos)
    flags = _sinusoid_flags(layout, f32_angles)
    _check(lib.posenc_sinusoid_add_f32(handle, x.shape[0], _pointer(positions), start_pos,
                                       _address(x), row_stride, flags),
           "posenc_sinusoid_add_f32")


# --- ALiBi --------------------------------------------------------------------------------

def alibi_slopes(n_heads, max_bias=8.0):
    """A new float32 array of the n_heads ALiBi slopes (posenc_alibi_slopes; seed 000's
    _get_slopes with max_bias for its 8). n_heads >= 1; max_bias finite, > 0."""
    n_heads = _size("n_heads", n_heads)
    out = np.empty(n_heads, np.float32)
    _check(lib.posenc_alibi_slopes(n_heads, _float("max_bias", max_bias), _address(out)),
           "posenc_alibi_slopes")
    return out


def _alibi_flags(causal):
    return _lib.ALIBI_CAUSAL if causal else 0


def alibi_add(scores, slopes, q_offset=0, scale=1.0, causal=False):
    """Adds the ALiBi bias into attention scores in place: posenc_alibi_add_f32.

    scores: a writeable float32 view [H, n_q, n_k] (rows may be strided; [n_q, H, n_k]
    storage as s.transpose(1, 0, 2)). Query row i is at position q_offset + i, key j at j:
        S = scale * S - slope_h * |q_offset + i - j|,  -inf where j > q_offset + i if causal.
    slopes: H real numbers, used as float32. Returns None.
    """
    head_stride, row_stride, _ = _array("scores", scores, 3, writeable=True)
    n_heads, n_q, n_k = scores.shape
    slopes = _real_vector("slopes", slopes, np.float32, n_heads)
    _check(lib.posenc_alibi_add_f32(_address(slopes), n_heads, n_q, n_k,
                                    _size("q_offset", q_offset), _address(scores), head_stride,
                                    row_stride, _float("scale", scale), _alibi_flags(causal)),
           "posenc_alibi_add_f32")


def alibi_bias(slopes, n_q, n_k, q_offset=0, causal=False, out=None):
    """The ALiBi bias itself, -(slope_h * |q_offset + i - j|) (-inf above the diagonal if
    causal): posenc_alibi_bias_f32. Seed 000's get_bias(L)[0] is alibi_bias(slopes, L, L),
    bit for bit. out: None for a new [H, n_q, n_k] float32 array, or a writeable view of that
    shape. Returns out."""
    slopes = _real_vector("slopes", slopes, np.float32)
    n_heads, n_q, n_k = slopes.shape[0], _size("n_q", n_q), _size("n_k", n_k)
    if out is None:
        out = np.empty((n_heads, n_q, n_k), np.float32)
    head_stride, row_stride, _ = _array("out", out, 3, writeable=True)
    if out.shape != (n_heads, n_q, n_k):
        raise ValueError(f"out must have shape {(n_heads, n_q, n_k)}, got {out.shape}")
    _check(lib.posenc_alibi_bias_f32(_address(slopes), n_heads, n_q, n_k,
                                     _size("q_offset", q_offset), _address(out), head_stride,
                                     row_stride, _alibi_flags(causal)),
           "posenc_alibi_bias_f32")
    return out


# --- learned ------------------------------------------------------------------------------

def learned_add(table, x, positions=None, start_pos=0):
    """Adds learned position embeddings in place, x[t] += table[position of t]:
    posenc_learned_add_f32. Returns None.

    table: a float32 [max_pos, d] view (read only; rows may be strided). x: a writeable
    float32 [L, d] view not overlapping the table. positions: L integer positions in
    [0, max_pos), or None for start_pos + t (seed 003's apply_learned is start_pos=0); every
    position is checked before anything is written.
    """
    table_stride, _ = _array("table", table, 2, writeable=False)
    x_stride, _ = _array("x", x, 2, writeable=True)
    if x.shape[1] != table.shape[1]:
        raise ValueError(f"x {x.shape} and table {table.shape} must have the same width")
    positions, start_pos = _positions(positions, x.shape[0], start_pos)
    _check(lib.posenc_learned_add_f32(_address(table), table.shape[0], table_stride,
                                      table.shape[1], x.shape[0], _pointer(positions),
                                      start_pos, _address(x), x_stride),
           "posenc_learned_add_f32")


__version__ = version()
