"""Shared by the operation modules: errors, argument conversion, plans, storage types and
the strides of data arrays."""

import ctypes
import operator

import numpy as np

from . import _lib
from ._lib import lib


_SIZE_MAX = 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1
_INT32_MIN, _INT32_MAX = -2 ** 31, 2 ** 31 - 1
_F32 = np.dtype(np.float32)


class PosencError(ValueError):
    """A C function returned a status other than POSENC_OK. `status` is the posenc_status
    value, `status_string` its posenc_status_string(), `detail` what the library said about
    this refusal (posenc_last_error(), read right after the call on the same thread; "" from
    a library without it)."""

    def __init__(self, function, status, detail=""):
        self.function = function
        self.status = status
        self.status_string = lib.posenc_status_string(status).decode()
        self.detail = detail
        if not detail:
            message = f"{function}: {self.status_string}"
        elif detail.startswith(function.split("(")[0]):
            message = f"{detail} ({self.status_string})"
        else:
            message = f"{function}: {self.status_string}: {detail}"
        super().__init__(message)


def _last_error():
    """posenc_last_error() of this thread, or "" (a library older than it)."""
    if not _lib.HAS_LAST_ERROR:
        return ""
    text = lib.posenc_last_error()
    return text.decode(errors="replace") if text else ""


class PosencMemoryError(PosencError, MemoryError):
    """POSENC_ERR_OUT_OF_MEMORY (plan creation)."""


def _check(status, function):
    if status == _lib.POSENC_ERR_OUT_OF_MEMORY:
        raise PosencMemoryError(function, status, _last_error())
    if status != _lib.POSENC_OK:
        raise PosencError(function, status, _last_error())



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


def _address(array):
    return array.ctypes.data


def _positions(positions, n_tokens, start_pos, wide=False):
    """Returns (int32 array or None, start_pos). Positions of another integer dtype are
    converted after a range check; the int32 array is kept alive by the caller. n_tokens:
    the length the positions must have, None for any. wide=True (a RoPE call that takes
    POSENC_ROPE_POSITIONS_INT64, _positions_flag): int64 positions are returned as they are
    (no copy when contiguous; the library checks their range)."""
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
    if wide and array.dtype == np.int64:
        return np.ascontiguousarray(array), 0
    if array.dtype != np.int32:
        if array.size and (int(array.min()) < _INT32_MIN or int(array.max()) > _INT32_MAX):
            raise ValueError("positions outside the int32 range")
        array = array.astype(np.int32)
    return np.ascontiguousarray(array), 0


def _positions_flag(*arrays):
    """POSENC_ROPE_POSITIONS_INT64 when positions from _positions(..., wide=True) are int64
    (the flag covers every positions argument of a call), else 0."""
    wide = any(a is not None and a.dtype == np.int64 for a in arrays)
    return _lib.ROPE_POSITIONS_INT64 if wide else 0


def _named_positions(name, values, n):
    """n int32 positions (or None), with errors naming the argument."""
    try:
        return _positions(values, n, 0)[0]
    except (TypeError, ValueError) as error:
        raise type(error)(str(error).replace("positions", name, 1)) from None


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


def _layout(layout, table):
    key = layout.lower().replace("-", "_") if isinstance(layout, str) else None
    if key not in table:
        raise ValueError(f"layout must be one of {', '.join(map(repr, table))}, not {layout!r}")
    return table[key]



_DTYPE_NAMES = {"float32": _lib.DTYPE_F32, "f32": _lib.DTYPE_F32,
                "bfloat16": _lib.DTYPE_BF16, "bf16": _lib.DTYPE_BF16,
                "float16": _lib.DTYPE_F16, "f16": _lib.DTYPE_F16}
_DTYPE_LABELS = {_lib.DTYPE_F32: "float32", _lib.DTYPE_BF16: "bfloat16",
                 _lib.DTYPE_F16: "float16"}
# The NumPy dtype of a new array of each storage type (NumPy has no bfloat16: its bits in
# uint16, as the C library's uint16_t).
_NUMPY_STORAGE = {_lib.DTYPE_F32: np.dtype(np.float32), _lib.DTYPE_BF16: np.dtype(np.uint16),
                  _lib.DTYPE_F16: np.dtype(np.float16)}


def _is_bfloat16(dtype):
    """A bfloat16 NumPy dtype from an extension (ml_dtypes, as JAX's), known by its name."""
    return dtype.name == "bfloat16" and dtype.itemsize == 2


def _storage_type(name, spec):
    """The posenc_dtype named by a dtype argument: "float32"/"f32", "bfloat16"/"bf16",
    "float16"/"f16", or a NumPy dtype (float32, float16, an extension's bfloat16)."""
    if isinstance(spec, str) and spec.lower() in _DTYPE_NAMES:
        return _DTYPE_NAMES[spec.lower()]
    try:
        dtype = np.dtype(spec)
    except TypeError:
        dtype = None
    if dtype == np.float32:
        return _lib.DTYPE_F32
    if dtype == np.float16:
        return _lib.DTYPE_F16
    if dtype is not None and _is_bfloat16(dtype):
        return _lib.DTYPE_BF16
    raise TypeError(f"{name} must be 'float32', 'bfloat16' or 'float16' (or such a NumPy "
                    f"dtype; uint16 says neither), not {spec!r}")


def _array_type(name, array, declared, prefer=None):
    """The posenc_dtype of a data array: float32, float16, an extension's bfloat16, or uint16
    holding bfloat16 or float16 bits. declared: the code the caller named (None: inferred;
    uint16 then means `prefer` if that is a 16-bit type, else bfloat16); it must be one the
    array's dtype can hold."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, not {type(array).__name__}")
    dtype = array.dtype
    if dtype == np.float32:
        holds = (_lib.DTYPE_F32,)
    elif dtype == np.float16:
        holds = (_lib.DTYPE_F16,)
    elif _is_bfloat16(dtype):
        holds = (_lib.DTYPE_BF16,)
    elif dtype == np.uint16:
        holds = (_lib.DTYPE_BF16, _lib.DTYPE_F16)
    else:
        holds = ()
    if not holds or not dtype.isnative:
        raise TypeError(f"{name} must have dtype float32, float16, bfloat16 or uint16 (bfloat16 "
                        f"or float16 bits), in native byte order, not {dtype}")
    if declared is None:
        return prefer if prefer in holds else holds[0]
    if declared not in holds:
        raise TypeError(f"{name} has dtype {dtype}, which does not hold "
                        f"{_DTYPE_LABELS[declared]}")
    return declared


def _element_strides(name, array, source):
    """The strides of a data array in its own elements (as _array does for float32). Axes of
    length 1 (or an empty array) get the C-order stride, never used. A source (only read)
    may have zero strides (np.broadcast_to: one tensor read for every batch)."""
    itemsize = array.dtype.itemsize
    strides = [0] * array.ndim
    inner = 1
    for axis in reversed(range(array.ndim)):
        length, stride = array.shape[axis], array.strides[axis]
        if array.size == 0 or length == 1:
            strides[axis] = inner
        elif stride == 0 and source and axis != array.ndim - 1:
            strides[axis] = 0
        elif stride <= 0 or stride % itemsize:
            zero = "zero/broadcast strides only on a source's outer axes, " if source else \
                "zero/broadcast, "
            raise ValueError(
                f"{name}: stride {stride} bytes on axis {axis} is not a positive whole number "
                f"of {itemsize}-byte elements (negative, {zero}and byte strides are not "
                "supported); pass a copy")
        else:
            strides[axis] = stride // itemsize
        inner = strides[axis] * length
    if array.size and array.shape[-1] > 1 and strides[-1] != 1:
        raise ValueError(f"{name}: the last axis (head_dim) must be contiguous (element stride "
                         f"1), got {strides[-1]}")
    if array.size and not array.flags.aligned:
        raise ValueError(f"{name} is not aligned to its elements")
    return strides


def _data(name, array, ndim, writeable, dtype=None, types=None):
    """Checks a data array of ndim axes in one of posenc's storage types (float32, float16,
    an extension's bfloat16, or uint16 holding bfloat16 bits, or float16 bits when dtype
    says) and returns (its posenc_dtype, its strides in elements). types: the codes the
    function takes (default all three)."""
    declared = None if dtype is None else _storage_type("dtype", dtype)
    names = None if types is None else " or ".join(_DTYPE_LABELS[t] for t in types)
    try:
        code = _array_type(name, array, declared)
    except TypeError:
        if names is None or not isinstance(array, np.ndarray):
            raise
        raise TypeError(f"{name} must have dtype {names} (native byte order), not "
                        f"{array.dtype}") from None
    if types is not None and code not in types:
        raise TypeError(f"{name} holds {_DTYPE_LABELS[code]}; this function takes {names}")
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {array.shape}")
    if writeable and not array.flags.writeable:
        raise ValueError(f"{name} is read-only; posenc writes into it in place")
    return code, _element_strides(name, array, source=False)


def _c_function(stem, code):
    """lib.<stem>_<f32|bf16|f16> for a posenc_dtype, and its name."""
    name = f"{stem}_{_lib.SUFFIX[code]}"
    return getattr(lib, name), name


def _new_or_given(out, shape, dtype):
    """out, or a new C-order array of shape in storage type dtype (default float32;
    bfloat16 as uint16 bits)."""
    if out is not None:
        return out
    code = _lib.DTYPE_F32 if dtype is None else _storage_type("dtype", dtype)
    return np.empty(shape, _NUMPY_STORAGE[code])
