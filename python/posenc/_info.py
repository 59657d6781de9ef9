"""The library and its dispatcher: version, ISAs, CPU, kernels."""

import ctypes

from . import _lib
from ._lib import lib
from ._core import _check


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
    posenc_isa_name): one of all_isas(), e.g. "avx2", "neon", "sve" or "rvv"."""
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
