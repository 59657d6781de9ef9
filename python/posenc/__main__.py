"""posenc-info for the Python package (`posenc-info`, or `python -m posenc`): the loaded
library's version and path, the CPU and the features the dispatcher looks at, the ISAs
compiled, available and active, and the tier serving each kernel; the C library's own
posenc-info (tools/info) prints the same facts for a C installation."""

import sys

import posenc


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if args:
        print("usage: posenc-info (no arguments): what posenc runs on this CPU", file=sys.stderr)
        return 2
    print(f"posenc {posenc.version()} (Python package; library {posenc.library_path()})")
    print(f"cpu: {posenc.cpu_name()}")
    print(f"features: {posenc.cpu_features()}")
    if posenc.cpu_sve_vector_bits():
        print(f"sve vector bits: {posenc.cpu_sve_vector_bits()}")
    print(f"compiled: {' '.join(posenc.compiled_isas())}")
    print(f"available: {' '.join(posenc.available_isas())}")
    source, requested = posenc.isa_selection()
    how = {"auto": "the best available", "env": f"POSENC_ISA={requested}",
           "env_fallback": f"POSENC_ISA={requested} is not available here: the best available",
           "api": "set_isa()"}[source]
    print(f"active: {posenc.active_isa()} ({how})")
    for kernel in posenc.kernels():
        print(f"  {kernel:<22} {posenc.kernel_isa(kernel)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
