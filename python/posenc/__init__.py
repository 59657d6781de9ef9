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
"""

import ctypes
import operator
import sys

import numpy as np

from . import _lib
from ._lib import lib
from ._torch import accepts_tensors

__all__ = [
    "PosencError", "version", "active_isa", "set_isa", "all_isas", "available_isas",
    "compiled_isas",
    "cpu_name", "cpu_features", "cpu_sve_vector_bits", "kernels", "kernel_isa", "isa_selection",
    "library_path", "RopePlan", "rope", "mrope", "rope_rerotate",
    "rope_out", "mrope_out", "RopeFactors", "rope_factors", "mrope_factors", "rope_apply",
    "apply", "plan_from_ggml",
    "SinusoidPlan",
    "sinusoid_fill", "sinusoid_fill_timesteps", "sinusoid_add", "alibi_slopes", "alibi_add",
    "alibi_bias", "alibi_softmax", "softmax", "learned_add",
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
    posenc_isa_name): "scalar", "sse4", "avx2", "avx512", "avx512bf16" or "neon"."""
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


_ISA_SOURCES = ("auto", "env", "env_fallback", "api")


def isa_selection():
    """How the active ISA was chosen, and what POSENC_ISA asked for (posenc_isa_selection):
    (source, requested), source one of "auto" (best available; POSENC_ISA unset), "env"
    (POSENC_ISA named an available ISA), "env_fallback" (it named an unavailable or unknown
    one: the best available is used) or "api" (set_isa()); requested: the ISA name POSENC_ISA
    asked for, "unknown" for a name posenc does not know, the active ISA when POSENC_ISA was
    not used."""
    requested = ctypes.c_int()
    source = lib.posenc_isa_selection(ctypes.byref(requested))
    return _ISA_SOURCES[source], _isa_name(requested.value)


def cpu_sve_vector_bits():
    """On aarch64 with SVE, the SVE vector length in bits; 0 without SVE
    (posenc_cpu_sve_vector_bits). For information: NEON serves every aarch64 CPU."""
    return lib.posenc_cpu_sve_vector_bits()


def kernels():
    """Names of the dispatch table's kernels ("rope_f32", ..., "softmax_16", ...), in the
    order of the C header's posenc_kernel enum (posenc_kernel_name)."""
    names = []
    while lib.posenc_kernel_name(len(names)).decode() != "unknown":
        names.append(lib.posenc_kernel_name(len(names)).decode())
    return names


def kernel_isa(kernel, isa=None):
    """The ISA whose variant serves `kernel` (a name from kernels()) now
    (posenc_kernel_isa), or, given an ISA name, the one that would serve it with that ISA
    active (posenc_kernel_isa_for: the ISA itself or the tier below where it has no variant
    of its own for the kernel). ValueError for an unknown kernel, or an ISA name that is
    unknown or not available here."""
    names = kernels()
    if kernel not in names:
        raise ValueError(f"unknown kernel {kernel!r} (one of {', '.join(names)})")
    index = names.index(kernel)
    if isa is None:
        return _isa_name(lib.posenc_kernel_isa(index))
    code = ctypes.c_int()
    if not isinstance(isa, str) or \
            lib.posenc_isa_from_name(isa.encode(), ctypes.byref(code)) != _lib.POSENC_OK:
        raise ValueError(f"unknown ISA {isa!r} (one of {', '.join(all_isas())})")
    served = lib.posenc_kernel_isa_for(index, code.value)
    if served >= len(all_isas()):
        raise ValueError(f"ISA {isa!r} is not available on this machine")
    return _isa_name(served)


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


def _scaling_struct(rope_scaling, base, max_position_embeddings, original_max_position_embeddings,
                    seq_len):
    """(posenc_rope_scaling, arrays it points to) of a HF rope_scaling dict (RopePlan.scaled).
    A rope_theta in the dict must equal base; partial_rotary_factor (a config key: the
    rotary_dim is given) must be 1."""
    scaling = dict(rope_scaling or {})
    kind = scaling.pop("rope_type", scaling.pop("type", "default"))
    if kind not in _lib.ROPE_SCALING_TYPES:
        raise ValueError(f"unknown rope_type {kind!r} (RopePlan.from_hf_config reads whole HF "
                         "configs, Qwen2-VL's \"mrope\" among them)")
    c = _lib.RopeScaling(type=_lib.ROPE_SCALING_TYPES[kind])
    c.max_position_embeddings = _size("max_position_embeddings", max_position_embeddings)
    c.original_max_position_embeddings = _size("original_max_position_embeddings",
                                               original_max_position_embeddings)
    c.seq_len = _size("seq_len", seq_len)
    keep = []  # factor arrays, alive until the call returns
    for key, value in scaling.items():
        if key == "rope_theta":
            if _float(key, value) != _float("base", base):
                raise ValueError(f"rope_theta {value} in the dict contradicts base {base}: pass "
                                 "base=rope_theta, or use RopePlan.from_hf_config(config)")
        elif key == "partial_rotary_factor":
            if _float(key, value) != 1.0:
                raise ValueError(f"partial_rotary_factor {value}: RopePlan.scaled takes rotary_dim "
                                 "itself (int(head_dim * partial_rotary_factor)); drop the key, "
                                 "or use RopePlan.from_hf_config(config)")
        elif key == "truncate":
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
            raise ValueError(f"unknown rope_scaling key {key!r} (RopePlan.from_hf_config reads "
                             "whole HF configs, with mrope_section and Phi-3-small's mscales)")
    return c, keep


def _torch_vector_floats():
    """The floats per vector of the CPU kernels the imported torch uses (RopePlan.hf_f32)."""
    torch = sys.modules.get("torch")
    if torch is None:
        raise ValueError("torch_vector_floats: torch is not imported; pass 16 (AVX512), 8 "
                         "(AVX2), 4 (aarch64) or 0 (torch's default kernels)")
    capability = None
    backend = getattr(getattr(torch, "backends", None), "cpu", None)
    if backend is not None and hasattr(backend, "get_cpu_capability"):
        capability = backend.get_cpu_capability()
    else:
        for line in torch.__config__.show().splitlines():
            if "CPU capability usage:" in line:
                capability = line.split(":", 1)[1].strip()
    table = {"AVX512": 16, "AVX2": 8, "DEFAULT": 0, "NEON": 4}
    if capability is None or capability.upper() not in table:
        raise ValueError(f"torch_vector_floats: unknown torch CPU capability {capability!r}; "
                         "pass it")
    return table[capability.upper()]


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
        False sets no_truncate; a "rope_theta" must equal base and a "partial_rotary_factor"
        be 1 (ValueError otherwise: pass base and rotary_dim, or use from_hf_config, which
        reads a whole config); any other key is a ValueError. The keyword arguments come
        from the model config rather than the dict (Phi-3 keeps
        original_max_position_embeddings outside it) or from the sequence: seq_len =
        largest position + 1 for "dynamic" and "longrope"."""
        c, keep = _scaling_struct(rope_scaling, base, max_position_embeddings,
                                  original_max_position_embeddings, seq_len)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_scaled, "posenc_rope_plan_create_scaled",
                    _size("rotary_dim", rotary_dim), _float("base", base), ctypes.byref(c))
        return plan

    @classmethod
    def from_hf_config(cls, config, seq_len=None, f32=False):
        """The plan of a HuggingFace transformers model config: a PretrainedConfig object
        (a composite one such as Qwen2-VL's is read where its text model keeps the keys)
        or its dict. Reads every key HF reads: rope_theta, rope_scaling (4.x, "type" or
        "rope_type") or rope_parameters (5.x), partial_rotary_factor, head_dim (else
        hidden_size // num_attention_heads), max_position_embeddings,
        original_max_position_embeddings (config level or in the dict) and mrope_section;
        an unknown key, or one the rope type does not read, or two that contradict each
        other, is a ValueError. The frequencies are exact (float64), or with f32=True HF's
        own float32 inv_freq bit for bit, as torch computes it on this CPU (hf_f32, with the
        imported torch's capability; with F32 angles, HF's angles exactly).

        The plan's `hf` attribute describes the config (rope_type, head_dim, rotary_dim,
        base, mrope_section, mrope_interleaved, seq_dependent). For "dynamic" and
        "longrope", whose frequencies HF derives from the sequence length, every kernel call
        takes that length from its own positions (largest position + 1), as HF's rotary
        module does each forward; seq_len given here fixes it instead."""
        from . import _hfconfig
        return _hfconfig.plan_from_hf_config(cls, config, seq_len, f32)

    @classmethod
    def from_freqs_f32(cls, freqs, attention_factor=1.0):
        """A plan whose frequencies are, bit for bit, the given float32 ones (a model's own
        `inv_freq` buffer, a runtime's table): posenc_rope_plan_create_from_freqs_f32. With
        f32_angles=True every angle is (float)p * freqs[i] rounded to float, that code's
        own angle."""
        freqs = _real_vector("freqs", freqs, np.float32)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_from_freqs_f32,
                    "posenc_rope_plan_create_from_freqs_f32", 2 * freqs.shape[0],
                    _address(freqs), _float("attention_factor", attention_factor))
        return plan

    @classmethod
    def powf(cls, rotary_dim, base=10000.0, attention_factor=1.0):
        """w_i = 1.0f / powf(base, (float)(2i) / (float)R) in float with the C library's
        powf, as llama2.c and its kin compute it: posenc_rope_plan_create_powf (base is
        used as a float)."""
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_powf, "posenc_rope_plan_create_powf",
                    _size("rotary_dim", rotary_dim), _float("base", base),
                    _float("attention_factor", attention_factor))
        return plan

    @classmethod
    def hf_f32(cls, rotary_dim, base=10000.0, rope_scaling=None, *, torch_vector_floats=None,
               max_position_embeddings=0, original_max_position_embeddings=0, seq_len=0):
        """HF transformers' own float32 `inv_freq`, operation by operation as torch computes
        it on a CPU: posenc_rope_plan_create_hf_f32. rope_scaling and the keywords: as for
        scaled(). torch_vector_floats: 16 for torch's AVX512 CPU kernels, 8 for AVX2, 4 for
        aarch64, 0 for its "default" ones; None asks the imported torch which it uses
        (torch.backends.cpu.get_cpu_capability(), or torch.__config__.show() on torch
        1.x), a ValueError when torch is not imported."""
        if torch_vector_floats is None:
            torch_vector_floats = _torch_vector_floats()
        c, keep = _scaling_struct(rope_scaling, base, max_position_embeddings,
                                  original_max_position_embeddings, seq_len)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_hf_f32, "posenc_rope_plan_create_hf_f32",
                    _size("rotary_dim", rotary_dim), _float("base", base), ctypes.byref(c),
                    _int("torch_vector_floats", torch_vector_floats, 0, 2 ** 32 - 1))
        return plan

    @classmethod
    def from_ggml(cls, n_dims, freq_base, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
                  beta_fast=32.0, beta_slow=1.0, n_ctx_orig=0, freq_factors=None):
        """The plan that rotates as llama.cpp / ggml's ggml_rope_ext does with these
        arguments (its YaRN recipe, in double): posenc_rope_plan_create_ggml.

        With theta_scale = freq_base^(-2/n_dims) and w_i = theta_scale^i / freq_factors[i],
            w'_i = w_i * (freq_scale * (1 - m_i) + m_i),  m_i = ramp(i) * ext_factor,
            ramp(i) = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1),
            lo = max(0, floor(c(beta_fast))), hi = min(n_dims - 1, ceil(c(beta_slow))),
            c(b) = n_dims * ln(n_ctx_orig / (2 pi b)) / (2 ln(freq_base)),
        and attention factor attn_factor (times 1 + 0.1 ln(1 / freq_scale) if ext_factor != 0).
        n_dims: R (rope.dimension_count); freq_scale: 1 / rope.scaling.factor (0 -> 1);
        attn_factor: 0 -> 1; beta_fast, beta_slow, n_ctx_orig: read only when ext_factor != 0
        (then n_ctx_orig > 0). freq_factors: None or n_dims / 2 divisors > 0 (the GGUF
        rope_freqs tensor), used as float32. The pair layout is chosen when rotating:
        ggml's GGML_ROPE_TYPE_NEOX is layout="neox", its normal mode layout="gptj"."""
        c = _lib.RopeGgmlParams(
            n_dims=_size("n_dims", n_dims), freq_base=_float("freq_base", freq_base),
            freq_scale=_float("freq_scale", freq_scale),
            ext_factor=_float("ext_factor", ext_factor),
            attn_factor=_float("attn_factor", attn_factor),
            beta_fast=_float("beta_fast", beta_fast), beta_slow=_float("beta_slow", beta_slow),
            n_ctx_orig=_size("n_ctx_orig", n_ctx_orig))
        factors = None
        if freq_factors is not None:  # the C function reads n_dims / 2 of them
            factors = _real_vector("freq_factors", freq_factors, np.float32, c.n_dims // 2)
            c.freq_factors = _address(factors)
        plan = cls.__new__(cls)
        _Plan.__init__(plan)
        plan._adopt(lib.posenc_rope_plan_create_ggml, "posenc_rope_plan_create_ggml",
                    ctypes.byref(c))
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


def _resolve(plan, positions, start_pos, n_tokens):
    """The RopePlan whose frequencies a call at these positions uses: the plan itself, or for
    a sequence-dependent HF plan (from_hf_config: "dynamic", "longrope") the one for the
    call's largest position + 1, as HF derives it from position_ids each forward."""
    _plan_handle(plan, RopePlan)
    hf = getattr(plan, "hf", None)
    if hf is None or not hf.seq_dependent:
        return plan
    if positions is not None:
        top = int(np.max(positions)) if np.size(positions) else 0
    else:
        top = start_pos + max(n_tokens, 1) - 1
    from . import _hfconfig
    return _hfconfig.resolve_plan(plan, top)


def _is_batched(q, axes):
    return axes is not None or (isinstance(q, np.ndarray) and q.ndim == 4)


def rope(plan, q, k=None, positions=None, start_pos=0, layout="neox", inverse=False,
         f32_angles=False, axes=None, dtype=None):
    """Rotates q (and k) in place: posenc_rope_f32, _bf16 or _f16 by q's storage type.

    q, k: arrays [L, H, D] (k may have its own head count, GQA/MQA), or any 3-D view indexed
    [token, head, element] whose strides are whole elements with the last axis contiguous
    ([H, L, D] storage as x.transpose(1, 0, 2), rows of a packed QKV buffer); or 4-D with a
    batch axis, in the order `axes` names ("BLHD", default for 4-D, or "BHLD" as HF passes
    q and k), then rotated by rope_out(plan, x, x, ...) each (in place, bitwise the same).
    Storage: float32, float16, bfloat16 (an ml_dtypes-style array, a torch tensor, or
    uint16 bits: bfloat16 unless dtype="float16"); q and k of one type.
    The first plan.rotary_dim elements of each head vector are rotated; the rest is kept.
    positions: L integer positions (converted to int32 after a range check), or None for
    start_pos + t; with a batch axis also [B, L] (HF's position_ids). layout: "neox" (pairs
    (x[i], x[i + R/2])) or "gptj" (pairs (x[2i], x[2i+1])). inverse: rotate by -angle
    (POSENC_ROPE_INVERSE). f32_angles: the float32 angle recipe of most reference code
    (POSENC_ROPE_F32_ANGLES). Returns None.
    """
    if _is_batched(q, axes):
        for x in (q, k):
            if x is not None:
                rope_out(plan, x, x, positions, start_pos, axes, layout, inverse, f32_angles,
                         dtype, dtype)
        return None
    code, q_view, k_view = _qk_views(q, k, dtype)
    n_tokens, _, head_dim = q.shape
    positions, start_pos = _positions(positions, n_tokens, start_pos)
    plan_used = _resolve(plan, positions, start_pos, n_tokens)  # alive through the call
    handle = plan_used._ptr()
    function, name = _c_function("posenc_rope", code)
    _check(function(handle, head_dim, n_tokens, _pointer(positions), start_pos,
                    ctypes.byref(q_view), None if k_view is None else ctypes.byref(k_view),
                    _rope_flags(layout, inverse, f32_angles)),
           name)


def mrope(plan, sections, q, k=None, positions=None, layout="neox", interleaved=False,
          inverse=False, f32_angles=False, axes=None, dtype=None):
    """Multimodal RoPE (Qwen2-VL; Qwen3-VL with interleaved=True) in place:
    posenc_mrope_f32, _bf16 or _f16 by q's storage type.

    q, k, axes, dtype: as for rope() (4-D: mrope_out in place, positions (3, B, L)).
    positions: integers of shape (3, L), HF's position_ids (3, batch, seq) for one sequence:
    rows temporal, height, width. sections: HF's mrope_section, three pair counts summing to
    plan.rotary_dim / 2. Pair i takes its angle from the row its section says (contiguous
    sections, or interleaved: height if i % 3 == 1 and i < 3 * sections[1], width if
    i % 3 == 2 and i < 3 * sections[2], else temporal); the rest is rope(). Returns None.
    """
    if _is_batched(q, axes):
        for x in (q, k):
            if x is not None:
                mrope_out(plan, sections, x, x, positions, axes, layout, interleaved, inverse,
                          f32_angles, dtype, dtype)
        return None
    code, q_view, k_view = _qk_views(q, k, dtype)
    n_tokens, _, head_dim = q.shape
    rows = np.asarray(positions if positions is not None else np.zeros((3, 0), np.int32))
    if rows.ndim != 2 or rows.shape != (3, n_tokens):
        raise ValueError(f"positions must have shape (3, {n_tokens}), got {rows.shape}")
    flat, _ = _positions(rows.reshape(-1), 3 * n_tokens, 0)
    plan_used = _resolve(plan, flat, 0, n_tokens)  # alive through the call
    handle = plan_used._ptr()
    function, name = _c_function("posenc_mrope", code)
    _check(function(handle, _sections(sections), head_dim, n_tokens, _pointer(flat),
                    ctypes.byref(q_view), None if k_view is None else ctypes.byref(k_view),
                    _rope_flags(layout, inverse, f32_angles, interleaved)),
           name)


def rope_rerotate(from_plan, to_plan, k, from_positions=None, from_start=0, to_positions=None,
                  to_start=0, layout="neox", f32_angles=False, dtype=None):
    """Re-rotates cached keys in place in one pass: posenc_rope_rerotate_f32, _bf16 or _f16
    by k's storage type.

    k: [L, H, D] (as for rope(); float32, float16 or bfloat16) holding keys rotated by
    (from_plan, position p_t); afterwards they are rotated by (to_plan, p'_t): each pair by
    p'_t w'_i - p_t w_i, scaled by to_plan.attention_factor / from_plan.attention_factor.
    Positions: L integers, or None for a run from *_start. Returns None.
    """
    code, k_view = _rope_view("k", k, dtype)
    n_tokens, _, head_dim = k.shape
    from_pos, from_start = _positions(from_positions, n_tokens, from_start)
    to_pos, to_start = _positions(to_positions, n_tokens, to_start)
    from_plan_used = _resolve(from_plan, from_pos, from_start, n_tokens)  # alive in the call
    from_handle = from_plan_used._ptr()
    to_plan_used = _resolve(to_plan, to_pos, to_start, n_tokens)
    to_handle = to_plan_used._ptr()
    function, name = _c_function("posenc_rope_rerotate", code)
    _check(function(from_handle, _pointer(from_pos), from_start, to_handle, _pointer(to_pos),
                    to_start, head_dim, n_tokens, ctypes.byref(k_view),
                    _rope_flags(layout, f32_angles=f32_angles)),
           name)


# --- runtime-shaped RoPE: 4-D views, out of place, rotation factors -----------------------

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


def _axes(axes, ndim):
    """The axis order of a 4-D ([B, L, H, D] ...) or 3-D ([L, H, D] ...) array: a string of
    B (batch), L (tokens), H (heads) and D (the head vector, last)."""
    if ndim not in (3, 4):
        raise ValueError(f"src must be 4-D (batch, tokens, heads, head_dim in the order axes "
                         f"names) or 3-D (no batch), got {ndim}-D")
    letters = "BLHD" if ndim == 4 else "LHD"
    if axes is None:
        return letters
    if not isinstance(axes, str):
        raise TypeError(f"axes must be a str such as 'BLHD' or 'BHLD', not {type(axes).__name__}")
    order = axes.upper()
    if sorted(order) != sorted(letters) or order[-1] != "D":
        raise ValueError(f"axes {axes!r} must order the letters of {letters!r} with D last, for "
                         f"a {ndim}-D array")
    return order


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


def _src_dst(src, dst, axes, src_dtype, dst_dtype):
    """Checks src and dst (allocated when None: src's shape, C order) and returns (dst,
    src view, dst view, (n_batch, n_tokens, n_heads, head_dim)). The type pair itself is
    the C function's to accept."""
    declared = None if src_dtype is None else _storage_type("src_dtype", src_dtype)
    src_code = _array_type("src", src, declared)
    axes = _axes(axes, src.ndim)
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
    return _positions(array.reshape(-1), n_batch * n_tokens, start_pos)


def _mrope_positions(positions, n_batch, n_tokens):
    """M-RoPE positions of n_batch x n_tokens tokens: (3, B, L) (HF's position_ids) or
    (3, L) (the same in every batch). Returns the int32 array of 3 * B * L entries."""
    array = np.asarray(positions if positions is not None else np.zeros((3, 0), np.int32))
    if array.ndim == 2 and array.shape == (3, n_tokens):
        array = np.broadcast_to(array[:, None, :], (3, n_batch, n_tokens))
    elif array.shape != (3, n_batch, n_tokens):
        raise ValueError(f"positions must have shape (3, {n_batch}, {n_tokens}) or "
                         f"(3, {n_tokens}), got {array.shape}")
    flat, _ = _positions(array.reshape(-1), 3 * n_batch * n_tokens, 0)
    return flat


def _sections(sections):
    sec = [int(x) for x in sections]
    if len(sec) != 3 or min(sec) < 0:
        raise ValueError(f"sections must be three pair counts >= 0, got {sections!r}")
    return (ctypes.c_size_t * 3)(*sec)


def _rope_flags(layout, inverse=False, f32_angles=False, interleaved=False):
    flags = _layout(layout, _ROPE_LAYOUTS)
    flags |= _lib.ROPE_INVERSE if inverse else 0
    flags |= _lib.ROPE_F32_ANGLES if f32_angles else 0
    flags |= _lib.ROPE_MROPE_INTERLEAVED if interleaved else 0
    return flags


def rope_out(plan, src, dst=None, positions=None, start_pos=0, axes=None, layout="neox",
             inverse=False, f32_angles=False, src_dtype=None, dst_dtype=None):
    """Out-of-place RoPE over a batch, dst = rope(src): posenc_rope_out. Returns dst.

    src: a 4-D array whose axis order `axes` names with the letters B (batch), L (tokens),
    H (heads) and D (head_dim, last): "BLHD" (default; llama.cpp, vLLM) or "BHLD" (HF
    transformers), or any other order; or a 3-D array, "LHD" (default) or "HLD". Strides are
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
    t of batch b at positions[b, t]), or [L] for every batch. layout, inverse, f32_angles:
    as for rope(). Each rotated element is bitwise what rope() (or the C library's in-place
    bf16/f16 form for 16-bit sources) gives at the same position, rounded to dst's type.
    """
    _plan_handle(plan, RopePlan)
    dst, src_view, dst_view, (n_batch, n_tokens, _, head_dim) = _src_dst(
        src, dst, axes, src_dtype, dst_dtype)
    positions, start_pos = _batch_positions(positions, n_batch, n_tokens, start_pos)
    plan_used = _resolve(plan, positions, start_pos, n_tokens)  # alive through the call
    handle = plan_used._ptr()
    flags = _rope_flags(layout, inverse, f32_angles)
    _check(lib.posenc_rope_out(handle, head_dim, n_batch, n_tokens, _pointer(positions),
                               start_pos, ctypes.byref(src_view), ctypes.byref(dst_view), flags),
           "posenc_rope_out")
    return dst


def mrope_out(plan, sections, src, dst=None, positions=None, axes=None, layout="neox",
              interleaved=False, inverse=False, f32_angles=False, src_dtype=None,
              dst_dtype=None):
    """Out-of-place M-RoPE over a batch: posenc_mrope_out. Returns dst.

    src, dst, axes, src_dtype, dst_dtype: as for rope_out(). sections, interleaved, layout,
    inverse, f32_angles: as for mrope(). positions: integers of shape (3, B, L), HF's
    position_ids (rows temporal, height, width), or (3, L) for every batch.
    """
    _plan_handle(plan, RopePlan)
    dst, src_view, dst_view, (n_batch, n_tokens, _, head_dim) = _src_dst(
        src, dst, axes, src_dtype, dst_dtype)
    flat = _mrope_positions(positions, n_batch, n_tokens)
    plan_used = _resolve(plan, flat, 0, n_tokens)  # alive through the call
    handle = plan_used._ptr()
    sec_array = _sections(sections)
    flags = _rope_flags(layout, inverse, f32_angles, interleaved)
    _check(lib.posenc_mrope_out(handle, sec_array, head_dim, n_batch, n_tokens, _pointer(flat),
                                ctypes.byref(src_view), ctypes.byref(dst_view), flags),
           "posenc_mrope_out")
    return dst


def _aligned_float32(nbytes, alignment=64):
    """A new float32 array of nbytes bytes (a multiple of 4) starting on an `alignment`-byte
    boundary (cache lines; the C library needs only float alignment)."""
    raw = np.empty(nbytes + alignment, np.uint8)
    offset = -raw.ctypes.data % alignment
    return raw[offset:offset + nbytes].view(np.float32)


def _factor_storage(rotary_dim, n_rows, layout_flag, storage):
    """(float32 array, its size in bytes) to hold n_rows rows of factors."""
    if storage is None:
        need = lib.posenc_rope_factors_bytes(rotary_dim, n_rows, layout_flag)
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


def rope_factors(plan, positions=None, start_pos=0, n_rows=None, layout="neox",
                 f32_angles=False, storage=None):
    """Computes the rotation factors of n_rows positions: posenc_rope_factors_compute.
    Returns a RopeFactors.

    positions: integers, 1-D (row r at positions[r]) or [B, L] (flattened row-major: row
    b * L + t, what rope_apply's default row_batch_stride = L reads for token t of batch b);
    or None with n_rows for the run start_pos + r. layout: "neox" or "gptj", fixed for
    applying. f32_angles: POSENC_ROPE_F32_ANGLES (inverse is chosen when applying). The
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
                                    start_pos)
        n_rows = pos.shape[0]
    plan_used = _resolve(plan, pos, start_pos, n_rows)  # alive through the call
    handle = plan_used._ptr()
    flags = _rope_flags(layout, f32_angles=f32_angles)
    storage, nbytes = _factor_storage(plan.rotary_dim, n_rows, flags & _lib.ROPE_GPTJ, storage)
    struct = _lib.RopeFactors()
    _check(lib.posenc_rope_factors_compute(handle, n_rows, _pointer(pos), start_pos, flags,
                                           _address(storage), nbytes, ctypes.byref(struct)),
           "posenc_rope_factors_compute")
    return RopeFactors._make(struct, storage, bool(f32_angles))


def mrope_factors(plan, sections, positions, layout="neox", interleaved=False,
                  f32_angles=False, storage=None):
    """The M-RoPE rotation factors: posenc_mrope_factors_compute. Returns a RopeFactors.

    positions: integers of shape (3, n_rows) (rows temporal, height, width), or HF's
    position_ids (3, B, L), row b * L + t. sections, interleaved: as for mrope(); layout,
    f32_angles, storage: as for rope_factors().
    """
    _plan_handle(plan, RopePlan)
    array = np.asarray(positions)
    if array.ndim not in (2, 3) or array.shape[0] != 3:
        raise ValueError(f"positions must have shape (3, n_rows) or (3, B, L), got {array.shape}")
    array = array.reshape(3, -1)
    n_rows = array.shape[1]
    flat, _ = _positions(array.reshape(-1), 3 * n_rows, 0)
    plan_used = _resolve(plan, flat, 0, n_rows)  # alive through the call
    handle = plan_used._ptr()
    sec_array = _sections(sections)
    flags = _rope_flags(layout, f32_angles=f32_angles, interleaved=interleaved)
    storage, nbytes = _factor_storage(plan.rotary_dim, n_rows, flags & _lib.ROPE_GPTJ, storage)
    struct = _lib.RopeFactors()
    _check(lib.posenc_mrope_factors_compute(handle, sec_array, n_rows, _pointer(flat), flags,
                                            _address(storage), nbytes, ctypes.byref(struct)),
           "posenc_mrope_factors_compute")
    return RopeFactors._make(struct, storage, bool(f32_angles))


def rope_apply(factors, src, dst=None, first_row=0, row_batch_stride=None, axes=None,
               inverse=False, src_dtype=None, dst_dtype=None):
    """Applies rotation factors to a batch, out of place or in place (dst is src):
    posenc_rope_apply. Returns dst. Also available as posenc.apply.

    factors: a RopeFactors (its layout is the pair layout). Token t of batch b takes row
    first_row + b * row_batch_stride + t; row_batch_stride None means L (one row per token
    of every sequence, as rope_factors() lays out [B, L] positions), 0 every batch at the
    same positions. Rows past factors.n_rows are refused (PosencError). src, dst, axes,
    src_dtype, dst_dtype: as for rope_out(); inverse: rotate by -angle.
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


apply = rope_apply


def plan_from_ggml(n_dims, freq_base, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
                   beta_fast=32.0, beta_slow=1.0, n_ctx_orig=0, freq_factors=None):
    """RopePlan.from_ggml: the plan of llama.cpp / ggml's rope arguments
    (posenc_rope_plan_create_ggml)."""
    return RopePlan.from_ggml(n_dims, freq_base, freq_scale, ext_factor, attn_factor,
                              beta_fast, beta_slow, n_ctx_orig, freq_factors)


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


def _rows(name, array, n_rows, dim, writeable, dtype=None):
    """A [n_rows, dim] view in one of the storage types; returns (its posenc_dtype, its row
    stride in elements)."""
    code, (row_stride, _) = _data(name, array, 2, writeable, dtype)
    if array.shape != (n_rows, dim):
        raise ValueError(f"{name} must have shape ({n_rows}, {dim}), got {array.shape}")
    return code, row_stride


def _new_or_given(out, shape, dtype):
    """out, or a new C-order array of shape in storage type dtype (default float32;
    bfloat16 as uint16 bits)."""
    if out is not None:
        return out
    code = _lib.DTYPE_F32 if dtype is None else _storage_type("dtype", dtype)
    return np.empty(shape, _NUMPY_STORAGE[code])


def sinusoid_fill(plan, rows, start_pos=0, layout="interleaved", f32_angles=False, out=None,
                  dtype=None):
    """Writes sinusoidal encodings: posenc_sinusoid_fill_f32, _bf16 or _f16 by out's storage
    type. Returns out.

    rows: a number of rows n (positions start_pos .. start_pos + n - 1; seed 000's
    forward(n, offset) is start_pos=offset) or an array of n integer positions. out: None
    for a new [n, d] array of type dtype ("float32" (default), "bfloat16" (as uint16 bits),
    "float16"), or a writeable [n, d] view in one of them (rows may be strided; elements
    between rows are untouched; a uint16 out holds bfloat16 unless dtype="float16").
    layout: "interleaved" (sin, cos, sin, ...), "sin_cos" or "cos_sin". f32_angles:
    POSENC_SINUSOID_F32_ANGLES.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    if isinstance(rows, (int, np.integer)):
        n_rows = _size("rows", rows)
        positions, start_pos = _positions(None, n_rows, start_pos)
    else:
        positions, start_pos = _positions(rows, None, start_pos)
        n_rows = positions.shape[0]
    flags = _sinusoid_flags(layout, f32_angles)
    out = _new_or_given(out, (n_rows, plan.dim), dtype)
    code, row_stride = _rows("out", out, n_rows, plan.dim, True, dtype)
    function, name = _c_function("posenc_sinusoid_fill", code)
    _check(function(handle, n_rows, _pointer(positions), start_pos, _address(out), row_stride,
                    flags),
           name)
    return out


def sinusoid_fill_timesteps(plan, timesteps, layout="interleaved", f32_angles=False, out=None,
                            dtype=None):
    """Writes the encodings of float positions (diffusion timesteps):
    posenc_sinusoid_fill_timesteps_f32, _bf16 or _f16. Returns out.

    timesteps: n real numbers, used as float32 (converted if given in another real dtype);
    each finite with |t| < 2^31. out, dtype, layout, f32_angles: as for sinusoid_fill.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    timesteps = _real_vector("timesteps", timesteps, np.float32)
    flags = _sinusoid_flags(layout, f32_angles)
    out = _new_or_given(out, (timesteps.shape[0], plan.dim), dtype)
    code, row_stride = _rows("out", out, timesteps.shape[0], plan.dim, True, dtype)
    function, name = _c_function("posenc_sinusoid_fill_timesteps", code)
    _check(function(handle, timesteps.shape[0], _address(timesteps), _address(out), row_stride,
                    flags),
           name)
    return out


def sinusoid_add(plan, x, positions=None, start_pos=0, layout="interleaved", f32_angles=False,
                 dtype=None):
    """Adds the encoding into embeddings in place, x[r] += PE(position of row r), without a
    table (seeds 003/004): posenc_sinusoid_add_f32, _bf16 or _f16 by x's storage type.
    Returns None.

    x: a writeable [L, d] view (d = plan.dim; rows may be strided) of float32, float16 or
    bfloat16 (uint16 bits: bfloat16 unless dtype="float16"). positions: L integer
    positions, or None for start_pos + r. layout, f32_angles: as for sinusoid_fill.
    """
    handle = _plan_handle(plan, SinusoidPlan)
    if not isinstance(x, np.ndarray) or x.ndim != 2:
        _data("x", x, 2, True, dtype)  # raises the type or shape error
    code, row_stride = _rows("x", x, x.shape[0], plan.dim, True, dtype)
    positions, start_pos = _positions(positions, x.shape[0], start_pos)
    flags = _sinusoid_flags(layout, f32_angles)
    function, name = _c_function("posenc_sinusoid_add", code)
    _check(function(handle, x.shape[0], _pointer(positions), start_pos, _address(x),
                    row_stride, flags),
           name)


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


def alibi_add(scores, slopes, q_offset=0, scale=1.0, causal=False, dtype=None):
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


def alibi_bias(slopes, n_q, n_k, q_offset=0, causal=False, out=None, dtype=None):
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


def alibi_softmax(scores, slopes, q_offset=0, scale=1.0, causal=False, dtype=None):
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


# --- attention-score softmax --------------------------------------------------------------

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


def _named_positions(name, values, n):
    """n int32 positions (or None), with errors naming the argument."""
    try:
        return _positions(values, n, 0)[0]
    except (TypeError, ValueError) as error:
        raise type(error)(str(error).replace("positions", name, 1)) from None


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


# --- learned ------------------------------------------------------------------------------

def learned_add(table, x, positions=None, start_pos=0):
    """Adds learned position embeddings in place, x[t] += table[position of t]:
    posenc_learned_add_f32. Returns None.

    table: a float32 [max_pos, d] view (read only; rows may be strided). x: a writeable
    float32 [L, d] view not overlapping the table. positions: L integer positions in
    [0, max_pos), or None for start_pos + t (seed 003's apply_learned is start_pos=0); every
    position is checked before anything is written.
    """
    _, (table_stride, _) = _data("table", table, 2, False, types=(_lib.DTYPE_F32,))
    _, (x_stride, _) = _data("x", x, 2, True, types=(_lib.DTYPE_F32,))
    if x.shape[1] != table.shape[1]:
        raise ValueError(f"x {x.shape} and table {table.shape} must have the same width")
    positions, start_pos = _positions(positions, x.shape[0], start_pos)
    _check(lib.posenc_learned_add_f32(_address(table), table.shape[0], table_stride,
                                      table.shape[1], x.shape[0], _pointer(positions),
                                      start_pos, _address(x), x_stride),
           "posenc_learned_add_f32")


# torch CPU tensors wherever NumPy arrays are taken (python/posenc/_torch.py).
for _name in ("rope", "mrope", "rope_rerotate", "rope_out", "mrope_out", "rope_factors",
              "mrope_factors", "rope_apply", "sinusoid_fill", "sinusoid_fill_timesteps",
              "sinusoid_add", "alibi_add", "alibi_bias", "alibi_softmax", "softmax",
              "learned_add"):
    globals()[_name] = accepts_tensors(globals()[_name])
apply = rope_apply
for _cls, _names in ((RopePlan, ("from_freqs", "from_freqs_f32")),
                     (SinusoidPlan, ("from_freqs",))):
    for _name in _names:
        setattr(_cls, _name, classmethod(accepts_tensors(getattr(_cls, _name).__func__)))
del _cls, _name, _names

__version__ = version()
