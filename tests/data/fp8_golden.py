#!/usr/bin/env python3
"""Golden FP8 E4M3 bytes for tests/rope_fp8_test.cc: a NumPy transcription of the OCP FP8
E4M3 format (float8_e4m3fn: bias 7, no infinities, NaN S.1111.111, largest finite 448,
subnormals k * 2^-9) and of vLLM's fp8 cache write, __nv_cvt_float_to_fp8(x / scale,
__NV_SATFINITE, __NV_E4M3), written independently of posenc:

    y = float32(x / scale)                       (one float32 division)
    e = max(floor(log2 |y|), -6)                  (the binade; subnormals share 2^-6's step)
    r = rint(|y| / 2^(e - 3)) * 2^(e - 3)         (nearest, ties to even, exact in double)
    r = min(r, 448)                               (saturation; infinities too)
    code = r * 2^9 below 2^-6, else (E + 7) * 8 + (r / 2^E - 1) * 8 with E = log2 of r's
           binade; NaN: 0x7f (unsigned); else the sign bit of y added as 0x80 (so -0 is 0x80).

The test converts each row through posenc_rope_out_fp8 with a plan of one pair (the row's
values are elements [2, D), which the rotation copies), so these are the bytes it must
write. If ml_dtypes is importable, every row is cross-checked against
ml_dtypes.float8_e4m3fn of the clipped float32 y (NaN compared as NaN), and the output says
so in its header. Output: one line per row: the scale's float32 bits, ';', the values'
float32 bits, ';', the expected bytes in hex. Run: python3 fp8_golden.py > fp8_golden.txt
"""
import numpy as np

F = np.float32


def bits(x):
    return int(np.array([x], np.float32).view(np.uint32)[0])


def from_bits(u):
    return np.array([u], np.uint32).view(np.float32)[0]


def e4m3(y):
    y = F(y)
    sign = 0x80 if np.signbit(y) else 0
    if np.isnan(y):
        return 0x7F  # posenc (and CUDA) write 0x7F for every NaN: its sign is not portable
    a = abs(float(y))  # exact
    if a == 0.0:
        return sign
    if a == float("inf"):
        r = 448.0
    else:
        e = max(int(np.frexp(a)[1]) - 1, -6)  # frexp: a = m 2^E, m in [0.5, 1)
        q = 2.0 ** (e - 3)
        r = min(float(np.rint(a / q)) * q, 448.0)
    if r < 2.0**-6:
        return sign | int(r * 512)
    E = int(np.frexp(r)[1]) - 1
    m = int(r / 2.0**E * 8) - 8
    return sign | ((E + 7) << 3) | m


def rows():
    out = []
    h = float.fromhex
    special = [0.0, -0.0, 1.0, -1.0, 1.0625, 1.1875, -1.0625, 1.3125, h("0x1p-9"),
               h("0x1.8p-9"), h("0x1.4p-9"), h("0x1p-10"), -h("0x1p-10"), h("0x1.000002p-10"),
               h("0x1.fffffep-11"), h("0x1.cp-7"), h("0x1.ep-7"), h("0x1.fffffep-7"),
               h("0x1p-6"), h("0x1.1p-6"), h("0x1.3p-6"), h("0x1.2p-6"), 448.0, -448.0, 449.0,
               464.0, -464.0, 463.99997, 480.0, 1e30, float("inf"), float("-inf"),
               float("nan"), -float("nan"), 3.4028235e38, 1e-45, -1e-45, 1.1754944e-38, 240.0,
               248.0, 232.0, 0.1, -0.3, 17.0, 18.0, 19.0, h("0x1.7p-3"), h("0x1.9p-3")]
    out.append((F(1.0), [F(v) for v in special]))
    out.append((F(3.0), [F(F(v) * F(3.0)) for v in special]))  # ties after the division
    out.append((F(0.0625), [F(v) for v in special]))
    rng = np.random.default_rng(20261206)
    for scale in (1.0, 0.05, 3.7, 1e-3, 0.0078125, 250.0):
        for _ in range(2):
            out.append((F(scale), list(rng.normal(0.0, 20.0 * scale, 64).astype(F))))
    # Random bit patterns over the whole float range.
    for scale in (1.0, 1e-20, 1e20):
        u = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
        out.append((F(scale), list(u.view(np.float32))))
    # Every E4M3 value, and the midpoints between neighbours, exactly (ties to even).
    vals = []
    for c in range(127):
        e, m = c >> 3, c & 7
        vals.append(m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
    mids = [(vals[i] + vals[i + 1]) / 2 for i in range(126)]
    grid = [F(v) for v in vals] + [F(v) for v in mids]
    for i in range(0, len(grid), 64):
        out.append((F(1.0), grid[i:i + 64]))
        out.append((F(1.0), [F(-v) for v in grid[i:i + 64]]))
    return out


def main():
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    lines = []
    checked = 0
    with np.errstate(all="ignore"):
        all_rows = rows()
    for scale, xs in all_rows:
        with np.errstate(all="ignore"):
            ys = [F(F(x) / scale) for x in xs]
        codes = [e4m3(y) for y in ys]
        if ml_dtypes is not None:
            with np.errstate(all="ignore"):
                clipped = np.clip(np.array(ys, np.float32), F(-448), F(448))
            ref = clipped.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
            for y, c, r in zip(ys, codes, ref):
                if np.isnan(y):
                    assert (r & 0x7F) == 0x7F and (c & 0x7F) == 0x7F, (y, c, r)
                else:
                    assert c == int(r), (float(y), hex(c), hex(int(r)))
                checked += 1
        lines.append("%08x ; %s ; %s" % (bits(scale), " ".join("%08x" % bits(x) for x in xs),
                                         "".join("%02x" % c for c in codes)))
    if ml_dtypes is not None:
        print("# cross-checked: %d values equal ml_dtypes %s float8_e4m3fn of the clipped y"
              % (checked, ml_dtypes.__version__))
    else:
        print("# ml_dtypes not importable: not cross-checked")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
