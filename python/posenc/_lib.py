"""Loads libposenc and declares the C prototypes of include/posenc.h."""

import ctypes
import ctypes.util
import os
from pathlib import Path

from . import _constants as C

# include/posenc.h's constants (_constants.py is generated from the header and checked against
# it by python/tests/test_constants.py), under the short names the package uses.
POSENC_OK = C.POSENC_OK
POSENC_ERR_INVALID_ARGUMENT = C.POSENC_ERR_INVALID_ARGUMENT
POSENC_ERR_UNSUPPORTED = C.POSENC_ERR_UNSUPPORTED
POSENC_ERR_OUT_OF_MEMORY = C.POSENC_ERR_OUT_OF_MEMORY

ROPE_GPTJ = C.POSENC_ROPE_GPTJ
ROPE_INVERSE = C.POSENC_ROPE_INVERSE
ROPE_F32_ANGLES = C.POSENC_ROPE_F32_ANGLES
ROPE_MROPE_INTERLEAVED = C.POSENC_ROPE_MROPE_INTERLEAVED
ROPE_DETERMINISTIC = C.POSENC_ROPE_DETERMINISTIC
ROPE_MROPE_GGML = C.POSENC_ROPE_MROPE_GGML
ROPE_POSITIONS_INT64 = C.POSENC_ROPE_POSITIONS_INT64
QK_NORM_GEMMA = C.POSENC_QK_NORM_GEMMA
SINUSOID_SIN_COS = C.POSENC_SINUSOID_SIN_COS
SINUSOID_COS_SIN = C.POSENC_SINUSOID_COS_SIN
SINUSOID_F32_ANGLES = C.POSENC_SINUSOID_F32_ANGLES
SINUSOID_DETERMINISTIC = C.POSENC_SINUSOID_DETERMINISTIC
ALIBI_CAUSAL = C.POSENC_ALIBI_CAUSAL
SOFTMAX_CAUSAL = C.POSENC_SOFTMAX_CAUSAL
SOFTMAX_WINDOW = C.POSENC_SOFTMAX_WINDOW
SOFTMAX_SOFTCAP = C.POSENC_SOFTMAX_SOFTCAP
SOFTMAX_ALIBI_SYMMETRIC = C.POSENC_SOFTMAX_ALIBI_SYMMETRIC
SOFTMAX_MASK_SLOPE = C.POSENC_SOFTMAX_MASK_SLOPE
SOFTMAX_KPOS_NEG_HIDDEN = C.POSENC_SOFTMAX_KPOS_NEG_HIDDEN
# posenc_softmax's accuracy: |y - y*| <= REL * y* + ABS (include/posenc.h).
SOFTMAX_REL_TOLERANCE = C.POSENC_SOFTMAX_REL_TOLERANCE
SOFTMAX_ABS_TOLERANCE = C.POSENC_SOFTMAX_ABS_TOLERANCE

# posenc_dtype: the storage type of a posenc_rope_view's or posenc_scores_view's elements.
DTYPE_F32 = C.POSENC_DTYPE_F32
DTYPE_BF16 = C.POSENC_DTYPE_BF16
DTYPE_F16 = C.POSENC_DTYPE_F16


def _candidates():
    """Where the library is looked for, in order: next to this package, $POSENC_LIBRARY,
    then the system's search (ctypes.util.find_library)."""
    here = Path(__file__).resolve().parent
    bundled = sorted(here.glob("libposenc.so*"), key=lambda p: len(p.name))
    found = [str(p) for p in bundled]
    if os.environ.get("POSENC_LIBRARY"):
        found.append(os.environ["POSENC_LIBRARY"])
    system = ctypes.util.find_library("posenc")
    if system:
        found.append(system)
    return found


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as error:
            errors.append(f"{path}: {error}")
    tried = "; ".join(errors) if errors else "none found"
    raise OSError(
        "posenc: cannot load libposenc (looked next to the package, in $POSENC_LIBRARY and "
        f"on the system library path; tried: {tried})")


lib, path = _load()

c_size = ctypes.c_size_t
# Array arguments are passed as addresses (ndarray.ctypes.data) or None for NULL.
c_int32_p = c_float_p = c_double_p = ctypes.c_void_p
c_status = ctypes.c_int


class RopeTensor(ctypes.Structure):
    """posenc_rope_tensor."""
    _fields_ = [("data", ctypes.c_void_p), ("n_heads", c_size), ("token_stride", c_size),
                ("head_stride", c_size)]


class RopeScaling(ctypes.Structure):
    """posenc_rope_scaling."""
    _fields_ = [("type", ctypes.c_int), ("factor", ctypes.c_double),
                ("attention_factor", ctypes.c_double),
                ("original_max_position_embeddings", c_size),
                ("max_position_embeddings", c_size), ("seq_len", c_size),
                ("beta_fast", ctypes.c_double), ("beta_slow", ctypes.c_double),
                ("mscale", ctypes.c_double), ("mscale_all_dim", ctypes.c_double),
                ("no_truncate", ctypes.c_int), ("low_freq_factor", ctypes.c_double),
                ("high_freq_factor", ctypes.c_double), ("short_factor", ctypes.c_void_p),
                ("short_factor_len", c_size), ("long_factor", ctypes.c_void_p),
                ("long_factor_len", c_size), ("alpha", ctypes.c_double),
                ("pair_factors", ctypes.c_void_p), ("pair_factors_len", c_size)]


class RopeGgmlParams(ctypes.Structure):
    """posenc_rope_ggml_params."""
    _fields_ = [("n_dims", c_size), ("freq_base", ctypes.c_double),
                ("freq_scale", ctypes.c_double), ("ext_factor", ctypes.c_double),
                ("attn_factor", ctypes.c_double), ("beta_fast", ctypes.c_double),
                ("beta_slow", ctypes.c_double), ("n_ctx_orig", c_size),
                ("freq_factors", ctypes.c_void_p), ("mode", ctypes.c_int),
                ("sections", ctypes.c_int * 4)]


class RopeView(ctypes.Structure):
    """posenc_rope_view (dtype: posenc_dtype, an int-sized enum)."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("n_heads", c_size),
                ("token_stride", c_size), ("head_stride", c_size), ("batch_stride", c_size)]


class RopeFactors(ctypes.Structure):
    """posenc_rope_factors."""
    _fields_ = [("data", ctypes.c_void_p), ("n_rows", c_size), ("rotary_dim", c_size),
                ("row_floats", c_size), ("flags", ctypes.c_uint)]


class SoftmaxParams(ctypes.Structure):
    """posenc_softmax_params (mask_dtype: posenc_dtype, an int-sized enum)."""
    _fields_ = [("scale", ctypes.c_float), ("softcap", ctypes.c_float),
                ("slopes", ctypes.c_void_p), ("sinks", ctypes.c_void_p),
                ("mask", ctypes.c_void_p), ("mask_dtype", ctypes.c_int),
                ("mask_row_stride", c_size), ("mask_head_stride", c_size),
                ("kpos", ctypes.c_void_p), ("qpos", ctypes.c_void_p),
                ("q_offset", ctypes.c_int32), ("window", ctypes.c_int32),
                ("flags", ctypes.c_uint), ("mask_n_heads", c_size),
                ("mask_batch_stride", c_size), ("mask_n_batch", c_size),
                ("kpos64", ctypes.c_void_p), ("qpos64", ctypes.c_void_p)]


class ScoresView(ctypes.Structure):
    """posenc_scores_view (dtype: posenc_dtype)."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("head_stride", c_size),
                ("row_stride", c_size), ("batch_stride", c_size)]


# posenc_rope_scaling_type by HF's rope_type names (and posenc's own two)
ROPE_SCALING_TYPES = {"default": C.POSENC_ROPE_SCALING_DEFAULT,
                      "linear": C.POSENC_ROPE_SCALING_LINEAR,
                      "dynamic": C.POSENC_ROPE_SCALING_DYNAMIC,
                      "yarn": C.POSENC_ROPE_SCALING_YARN,
                      "longrope": C.POSENC_ROPE_SCALING_LONGROPE,
                      "su": C.POSENC_ROPE_SCALING_LONGROPE,
                      "llama3": C.POSENC_ROPE_SCALING_LLAMA3,
                      "ntk_alpha": C.POSENC_ROPE_SCALING_NTK_ALPHA,
                      "pair_factors": C.POSENC_ROPE_SCALING_PAIR_FACTORS}


def _declare(name, restype, *argtypes):
    function = getattr(lib, name)
    function.restype = restype
    function.argtypes = list(argtypes)


_declare("posenc_version", ctypes.c_char_p)
# The detail of the calling thread's last refused call (a library without it: "")
HAS_LAST_ERROR = hasattr(lib, "posenc_last_error")
if HAS_LAST_ERROR:
    _declare("posenc_last_error", ctypes.c_char_p)
_declare("posenc_status_string", ctypes.c_char_p, c_status)
_declare("posenc_isa_name", ctypes.c_char_p, ctypes.c_int)
_declare("posenc_isa_from_name", c_status, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int))
_declare("posenc_isa_compiled", ctypes.c_int, ctypes.c_int)
_declare("posenc_isa_available", ctypes.c_int, ctypes.c_int)
_declare("posenc_active_isa", ctypes.c_int)
_declare("posenc_isa_selection", ctypes.c_int, ctypes.POINTER(ctypes.c_int))
_declare("posenc_cpu_name", ctypes.c_char_p)
_declare("posenc_cpu_features", ctypes.c_char_p)
_declare("posenc_set_isa", c_status, ctypes.c_int)

_declare("posenc_rope_plan_create", c_status, ctypes.POINTER(ctypes.c_void_p), c_size,
         ctypes.c_double, ctypes.c_double)
_declare("posenc_rope_plan_create_from_freqs", c_status, ctypes.POINTER(ctypes.c_void_p),
         c_size, c_double_p, ctypes.c_double)
_declare("posenc_rope_plan_create_scaled", c_status, ctypes.POINTER(ctypes.c_void_p), c_size,
         ctypes.c_double, ctypes.POINTER(RopeScaling))
_declare("posenc_rope_plan_destroy", None, ctypes.c_void_p)
_declare("posenc_rope_plan_rotary_dim", c_size, ctypes.c_void_p)
_declare("posenc_rope_plan_attention_factor", ctypes.c_double, ctypes.c_void_p)
_declare("posenc_rope_plan_freqs", c_status, ctypes.c_void_p, c_double_p)
_declare("posenc_rope_f32", c_status, ctypes.c_void_p, c_size, c_size, c_int32_p,
         ctypes.c_int32, ctypes.POINTER(RopeTensor), ctypes.POINTER(RopeTensor), ctypes.c_uint)
_declare("posenc_mrope_f32", c_status, ctypes.c_void_p, ctypes.POINTER(c_size), c_size,
         c_size, c_int32_p, ctypes.POINTER(RopeTensor), ctypes.POINTER(RopeTensor),
         ctypes.c_uint)
_declare("posenc_rope_rerotate_f32", c_status, ctypes.c_void_p, c_int32_p, ctypes.c_int32,
         ctypes.c_void_p, c_int32_p, ctypes.c_int32, c_size, c_size,
         ctypes.POINTER(RopeTensor), ctypes.c_uint)

_declare("posenc_rope_ggml_flags", c_status, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))
_declare("posenc_rope_plan_create_ggml", c_status, ctypes.POINTER(ctypes.c_void_p),
         ctypes.POINTER(RopeGgmlParams))
_declare("posenc_rope_plan_create_ggml_mode", c_status, ctypes.POINTER(ctypes.c_void_p),
         ctypes.POINTER(RopeGgmlParams), ctypes.POINTER(ctypes.c_uint))
_declare("posenc_rope_out", c_status, ctypes.c_void_p, c_size, c_size, c_size, c_int32_p,
         ctypes.c_int32, ctypes.POINTER(RopeView), ctypes.POINTER(RopeView), ctypes.c_uint)
class Slots(ctypes.Structure):
    """posenc_slots."""
    _fields_ = [("index", ctypes.c_void_p), ("is_int64", ctypes.c_int), ("n_cells", c_size)]


_declare("posenc_rope_out_slots", c_status, ctypes.c_void_p, c_size, c_size, c_int32_p,
         ctypes.c_int32, ctypes.POINTER(RopeView), ctypes.POINTER(RopeView),
         ctypes.POINTER(Slots), ctypes.c_uint)


class Q8View(ctypes.Structure):
    """posenc_q8_0_view (strides in bytes)."""
    _fields_ = [("data", ctypes.c_void_p), ("n_heads", c_size), ("token_stride", c_size),
                ("head_stride", c_size)]


_declare("posenc_rope_out_q8_0", c_status, ctypes.c_void_p, c_size, c_size, c_int32_p,
         ctypes.c_int32, ctypes.POINTER(RopeView), ctypes.POINTER(Q8View),
         ctypes.POINTER(Slots), ctypes.c_uint)


class Fp8View(ctypes.Structure):
    """posenc_fp8_view (strides in bytes: one byte per element)."""
    _fields_ = [("data", ctypes.c_void_p), ("n_heads", c_size), ("token_stride", c_size),
                ("head_stride", c_size)]


_declare("posenc_rope_out_fp8", c_status, ctypes.c_void_p, c_size, c_size, c_int32_p,
         ctypes.c_int32, ctypes.POINTER(RopeView), ctypes.POINTER(Fp8View), ctypes.c_float,
         ctypes.POINTER(Slots), ctypes.c_uint)


class QkNorm(ctypes.Structure):
    """posenc_qk_norm."""
    _fields_ = [("weight", ctypes.c_void_p), ("eps", ctypes.c_float), ("flags", ctypes.c_uint)]


_declare("posenc_rope_qknorm", c_status, ctypes.c_void_p, c_size, c_size, c_size, c_int32_p,
         ctypes.c_int32, ctypes.POINTER(RopeView), ctypes.POINTER(RopeView),
         ctypes.POINTER(QkNorm), ctypes.POINTER(RopeView), ctypes.POINTER(RopeView),
         ctypes.POINTER(QkNorm), ctypes.c_uint)
_declare("posenc_mrope_out", c_status, ctypes.c_void_p, ctypes.POINTER(c_size), c_size, c_size,
         c_size, c_int32_p, ctypes.POINTER(RopeView), ctypes.POINTER(RopeView), ctypes.c_uint)
_declare("posenc_rope_factors_bytes", c_size, c_size, c_size, ctypes.c_uint)
_declare("posenc_rope_factors_compute", c_status, ctypes.c_void_p, c_size, c_int32_p,
         ctypes.c_int32, ctypes.c_uint, ctypes.c_void_p, c_size, ctypes.POINTER(RopeFactors))
_declare("posenc_mrope_factors_compute", c_status, ctypes.c_void_p, ctypes.POINTER(c_size),
         c_size, c_int32_p, ctypes.c_uint, ctypes.c_void_p, c_size,
         ctypes.POINTER(RopeFactors))
_declare("posenc_rope_apply", c_status, ctypes.POINTER(RopeFactors), c_size, c_size, c_size,
         c_size, c_size, ctypes.POINTER(RopeView), ctypes.POINTER(RopeView), ctypes.c_uint)
_declare("posenc_rope_apply_slots", c_status, ctypes.POINTER(RopeFactors), c_size, c_size,
         c_size, ctypes.POINTER(RopeView), ctypes.POINTER(RopeView), ctypes.POINTER(Slots),
         ctypes.c_uint)

_declare("posenc_sinusoid_plan_create", c_status, ctypes.POINTER(ctypes.c_void_p), c_size,
         ctypes.c_double)
_declare("posenc_sinusoid_plan_create_from_freqs", c_status, ctypes.POINTER(ctypes.c_void_p),
         c_size, c_double_p)
_declare("posenc_sinusoid_plan_destroy", None, ctypes.c_void_p)
_declare("posenc_sinusoid_plan_dim", c_size, ctypes.c_void_p)
_declare("posenc_sinusoid_plan_freqs", c_status, ctypes.c_void_p, c_double_p)
_declare("posenc_sinusoid_fill_f32", c_status, ctypes.c_void_p, c_size, c_int32_p,
         ctypes.c_int32, c_float_p, c_size, ctypes.c_uint)
_declare("posenc_sinusoid_fill_timesteps_f32", c_status, ctypes.c_void_p, c_size, c_float_p,
         c_float_p, c_size, ctypes.c_uint)
_declare("posenc_sinusoid_add_f32", c_status, ctypes.c_void_p, c_size, c_int32_p,
         ctypes.c_int32, c_float_p, c_size, ctypes.c_uint)

_declare("posenc_alibi_slopes", c_status, c_size, ctypes.c_double, c_float_p)
_declare("posenc_alibi_slopes_ggml", c_status, c_size, ctypes.c_float, c_float_p)
_declare("posenc_alibi_add_f32", c_status, c_float_p, c_size, c_size, c_size, c_size,
         c_float_p, c_size, c_size, ctypes.c_float, ctypes.c_uint)
_declare("posenc_alibi_bias_f32", c_status, c_float_p, c_size, c_size, c_size, c_size,
         c_float_p, c_size, c_size, ctypes.c_uint)

_declare("posenc_softmax", c_status, ctypes.POINTER(SoftmaxParams), c_size, c_size, c_size,
         ctypes.POINTER(ScoresView), ctypes.POINTER(ScoresView))
_declare("posenc_softmax_batched", c_status, ctypes.POINTER(SoftmaxParams), c_size, c_size,
         c_size, c_size, ctypes.POINTER(ScoresView), ctypes.POINTER(ScoresView))

_declare("posenc_learned_add_f32", c_status, c_float_p, c_size, c_size, c_size, c_size,
         c_int32_p, ctypes.c_int32, c_float_p, c_size)

# The entry points added for the bindings of every C function (16-bit in-place forms, the
# float32 plan recipes, the fused ALiBi softmax, the dispatcher's kernel queries).
_declare("posenc_cpu_sve_vector_bits", ctypes.c_uint)
_declare("posenc_kernel_name", ctypes.c_char_p, ctypes.c_int)
_declare("posenc_kernel_isa", ctypes.c_int, ctypes.c_int)
_declare("posenc_kernel_isa_for", ctypes.c_int, ctypes.c_int, ctypes.c_int)
_declare("posenc_rope_plan_create_from_freqs_f32", c_status, ctypes.POINTER(ctypes.c_void_p),
         c_size, c_float_p, ctypes.c_double)
_declare("posenc_rope_plan_create_powf", c_status, ctypes.POINTER(ctypes.c_void_p), c_size,
         ctypes.c_float, ctypes.c_double)
_declare("posenc_rope_plan_create_hf_f32", c_status, ctypes.POINTER(ctypes.c_void_p), c_size,
         ctypes.c_double, ctypes.POINTER(RopeScaling), ctypes.c_uint)
for _suffix in ("bf16", "f16"):
    _declare(f"posenc_rope_{_suffix}", c_status, ctypes.c_void_p, c_size, c_size, c_int32_p,
             ctypes.c_int32, ctypes.POINTER(RopeTensor), ctypes.POINTER(RopeTensor),
             ctypes.c_uint)
    _declare(f"posenc_mrope_{_suffix}", c_status, ctypes.c_void_p, ctypes.POINTER(c_size),
             c_size, c_size, c_int32_p, ctypes.POINTER(RopeTensor), ctypes.POINTER(RopeTensor),
             ctypes.c_uint)
    _declare(f"posenc_rope_rerotate_{_suffix}", c_status, ctypes.c_void_p, c_int32_p,
             ctypes.c_int32, ctypes.c_void_p, c_int32_p, ctypes.c_int32, c_size, c_size,
             ctypes.POINTER(RopeTensor), ctypes.c_uint)
    _declare(f"posenc_sinusoid_fill_{_suffix}", c_status, ctypes.c_void_p, c_size, c_int32_p,
             ctypes.c_int32, ctypes.c_void_p, c_size, ctypes.c_uint)
    _declare(f"posenc_sinusoid_fill_timesteps_{_suffix}", c_status, ctypes.c_void_p, c_size,
             c_float_p, ctypes.c_void_p, c_size, ctypes.c_uint)
    _declare(f"posenc_sinusoid_add_{_suffix}", c_status, ctypes.c_void_p, c_size, c_int32_p,
             ctypes.c_int32, ctypes.c_void_p, c_size, ctypes.c_uint)
    _declare(f"posenc_alibi_add_{_suffix}", c_status, c_float_p, c_size, c_size, c_size, c_size,
             ctypes.c_void_p, c_size, c_size, ctypes.c_float, ctypes.c_uint)
    _declare(f"posenc_alibi_bias_{_suffix}", c_status, c_float_p, c_size, c_size, c_size,
             c_size, ctypes.c_void_p, c_size, c_size, ctypes.c_uint)
_declare("posenc_alibi_softmax_f32", c_status, c_float_p, c_size, c_size, c_size, c_size,
         c_float_p, c_size, c_size, ctypes.c_float, ctypes.c_uint)
_declare("posenc_alibi_softmax_bf16", c_status, c_float_p, c_size, c_size, c_size, c_size,
         ctypes.c_void_p, c_size, c_size, ctypes.c_float, ctypes.c_uint)

# posenc_dtype -> the suffix of the C functions for that storage type
SUFFIX = {DTYPE_F32: "f32", DTYPE_BF16: "bf16", DTYPE_F16: "f16"}
