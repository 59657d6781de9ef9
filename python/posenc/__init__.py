"""posenc: SIMD kernels for transformer positional encodings, on NumPy arrays and PyTorch
CPU tensors.

A thin ctypes layer over the C library (include/posenc.h is the contract); every C entry
point has a binding. Data arrays are never copied: every function works on the caller's
memory, in place, or writes into a new (or given) array, in float32, float16 or bfloat16
(as uint16 bits, an extension's bfloat16 dtype such as ml_dtypes', or a torch bfloat16
tensor) where the C library has that form (learned_add: float32 only). torch CPU tensors
are taken wherever arrays are, as views of the same memory, and a function given one
returns tensors (python/posenc/_torch.py); torch is never imported by posenc itself.
posenc.hf runs HF transformers models on posenc. Small parameter arrays (positions,
timesteps, slopes, frequencies) are converted to the C types when needed. Sizes and strides
are taken from the arrays; the C functions get strides in elements, so every stride must be
a whole number of elements and the last axis must be contiguous.

Errors: TypeError for a wrong type or dtype, ValueError for bad shapes, strides, non-writeable
or misaligned arrays and out-of-range arguments, and PosencError (a ValueError) carrying the
C status and its string when a C function returns anything but POSENC_OK (nothing has been
written then). The C calls release the GIL (ctypes), so threads can run kernels at once on
disjoint arrays.
Modules, by operation: _info (library, ISAs, kernels), _plans (RopePlan), _rope (rope, mrope,
rope_rerotate, rope_out, mrope_out), _factors (RopeFactors, rope_factors, mrope_factors,
rope_apply), _sinusoid, _alibi, _softmax, _learned; _core holds what they share, _lib the C
prototypes, _torch the tensor views, _hfconfig RopePlan.from_hf_config; everything public is
imported here.
"""

from ._core import PosencError, PosencMemoryError
from ._hfconfig import HfReadingWarning
from ._info import (active_isa, all_isas, available_isas, compiled_isas, cpu_features, cpu_name,
                    cpu_sve_vector_bits, isa_selection, kernel_isa, kernels, library_path,
                    set_isa, version)
from ._plans import RopePlan, ggml_rope_mode, plan_from_ggml
from ._rope import (mrope, mrope_out, rope, rope_out, rope_out_fp8, rope_out_q8_0, rope_out_slots,
                    rope_qknorm, rope_rerotate)
from ._factors import RopeFactors, mrope_factors, rope_apply, rope_apply_slots, rope_factors
from ._sinusoid import SinusoidPlan, sinusoid_add, sinusoid_fill, sinusoid_fill_timesteps
from ._alibi import alibi_add, alibi_bias, alibi_slopes, alibi_softmax
from ._softmax import softmax
from ._learned import learned_add
from ._torch import accepts_tensors

__all__ = [
    "PosencError", "PosencMemoryError", "HfReadingWarning", "version", "active_isa", "set_isa",
    "all_isas", "available_isas", "compiled_isas", "cpu_name", "cpu_features",
    "cpu_sve_vector_bits", "kernels", "kernel_isa", "isa_selection", "library_path", "RopePlan",
    "rope", "mrope",
    "rope_rerotate", "rope_out", "rope_out_slots", "rope_out_q8_0", "rope_out_fp8", "rope_qknorm",
    "mrope_out",
    "RopeFactors", "rope_factors", "mrope_factors",
    "rope_apply", "rope_apply_slots", "apply", "plan_from_ggml", "ggml_rope_mode",
    "SinusoidPlan", "sinusoid_fill",
    "sinusoid_fill_timesteps", "sinusoid_add", "alibi_slopes", "alibi_add", "alibi_bias",
    "alibi_softmax", "softmax", "learned_add",
]

# torch CPU tensors wherever NumPy arrays are taken (python/posenc/_torch.py).
# The out-of-place rotations record gradients through src; any other tensor that requires
# grad (with grad mode on) is a RuntimeError, never detached silently.
for _name in ("rope", "mrope", "rope_rerotate", "rope_factors", "mrope_factors",
              "sinusoid_fill", "sinusoid_fill_timesteps", "sinusoid_add", "alibi_add",
              "alibi_bias", "alibi_softmax", "learned_add", "rope_qknorm", "rope_out_slots",
              "rope_out_q8_0", "rope_out_fp8", "rope_apply_slots"):
    globals()[_name] = accepts_tensors(globals()[_name])
for _name in ("rope_out", "mrope_out", "rope_apply"):
    globals()[_name] = accepts_tensors(globals()[_name], differentiable="src")
softmax = accepts_tensors(softmax, widen=("mask",))
apply = rope_apply
for _cls, _names in ((RopePlan, ("from_freqs", "from_freqs_f32")),
                     (SinusoidPlan, ("from_freqs",))):
    for _name in _names:
        setattr(_cls, _name, classmethod(accepts_tensors(getattr(_cls, _name).__func__)))
del _cls, _name, _names

__version__ = version()

