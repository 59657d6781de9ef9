"""Sinusoidal position encodings."""

import numpy as np

from . import _lib
from ._lib import lib
from ._core import (_Plan, _address, _c_function, _check, _data, _float, _layout, _new_or_given,
                    _plan_handle, _pointer, _positions, _real_vector, _size)


_SINUSOID_LAYOUTS = {"interleaved": 0, "sin_cos": _lib.SINUSOID_SIN_COS,
                     "cos_sin": _lib.SINUSOID_COS_SIN}



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


def _sinusoid_flags(layout, f32_angles, deterministic=False):
    return (_layout(layout, _SINUSOID_LAYOUTS) | (_lib.SINUSOID_F32_ANGLES if f32_angles else 0)
            | (_lib.SINUSOID_DETERMINISTIC if deterministic else 0))


def _rows(name, array, n_rows, dim, writeable, dtype=None):
    """A [n_rows, dim] view in one of the storage types; returns (its posenc_dtype, its row
    stride in elements)."""
    code, (row_stride, _) = _data(name, array, 2, writeable, dtype)
    if array.shape != (n_rows, dim):
        raise ValueError(f"{name} must have shape ({n_rows}, {dim}), got {array.shape}")
    return code, row_stride


def sinusoid_fill(plan, rows, *, start_pos=0, layout="interleaved", f32_angles=False,
                  deterministic=False, out=None, dtype=None):
    """Writes sinusoidal encodings: posenc_sinusoid_fill_f32, _bf16 or _f16 by out's storage
    type. Returns out.

    rows: a number of rows n (positions start_pos .. start_pos + n - 1; seed 000's
    forward(n, offset) is start_pos=offset) or an array of n integer positions. out: None
    for a new [n, d] array of type dtype ("float32" (default), "bfloat16" (as uint16 bits),
    "float16"), or a writeable [n, d] view in one of them (rows may be strided; elements
    between rows are untouched; a uint16 out holds bfloat16 unless dtype="float16").
    layout: "interleaved" (sin, cos, sin, ...), "sin_cos" or "cos_sin". f32_angles:
    POSENC_SINUSOID_F32_ANGLES. deterministic: POSENC_SINUSOID_DETERMINISTIC, values bitwise
    identical on every ISA and CPU.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    if isinstance(rows, (int, np.integer)):
        n_rows = _size("rows", rows)
        positions, start_pos = _positions(None, n_rows, start_pos)
    else:
        positions, start_pos = _positions(rows, None, start_pos)
        n_rows = positions.shape[0]
    flags = _sinusoid_flags(layout, f32_angles, deterministic)
    out = _new_or_given(out, (n_rows, plan.dim), dtype)
    code, row_stride = _rows("out", out, n_rows, plan.dim, True, dtype)
    function, name = _c_function("posenc_sinusoid_fill", code)
    _check(function(handle, n_rows, _pointer(positions), start_pos, _address(out), row_stride,
                    flags),
           name)
    return out


def sinusoid_fill_timesteps(plan, timesteps, *, layout="interleaved", f32_angles=False,
                            deterministic=False, out=None, dtype=None):
    """Writes the encodings of float positions (diffusion timesteps):
    posenc_sinusoid_fill_timesteps_f32, _bf16 or _f16. Returns out.

    timesteps: n real numbers, used as float32 (converted if given in another real dtype);
    each finite with |t| < 2^31. out, dtype, layout, f32_angles, deterministic: as for
    sinusoid_fill.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    timesteps = _real_vector("timesteps", timesteps, np.float32)
    flags = _sinusoid_flags(layout, f32_angles, deterministic)
    out = _new_or_given(out, (timesteps.shape[0], plan.dim), dtype)
    code, row_stride = _rows("out", out, timesteps.shape[0], plan.dim, True, dtype)
    function, name = _c_function("posenc_sinusoid_fill_timesteps", code)
    _check(function(handle, timesteps.shape[0], _address(timesteps), _address(out), row_stride,
                    flags),
           name)
    return out


def sinusoid_add(plan, x, *, positions=None, start_pos=0, layout="interleaved",
                 f32_angles=False, deterministic=False, dtype=None):
    """Adds the encoding into embeddings in place, x[r] += PE(position of row r), without a
    table (seeds 003/004): posenc_sinusoid_add_f32, _bf16 or _f16 by x's storage type.
    Returns None.

    x: a writeable [L, d] view (d = plan.dim; rows may be strided) of float32, float16 or
    bfloat16 (uint16 bits: bfloat16 unless dtype="float16"). positions: L integer
    positions, or None for start_pos + r. layout, f32_angles, deterministic: as for
    sinusoid_fill.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    if not isinstance(x, np.ndarray) or x.ndim != 2:
        _data("x", x, 2, True, dtype)  # raises the type or shape error
    code, row_stride = _rows("x", x, x.shape[0], plan.dim, True, dtype)
    positions, start_pos = _positions(positions, x.shape[0], start_pos)
    flags = _sinusoid_flags(layout, f32_angles, deterministic)
    function, name = _c_function("posenc_sinusoid_add", code)
    _check(function(handle, x.shape[0], _pointer(positions), start_pos, _address(x),
                    row_stride, flags),
           name)
