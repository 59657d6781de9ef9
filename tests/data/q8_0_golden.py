#!/usr/bin/env python3
"""Golden q8_0 blocks for tests/rope_q8_0_test.cc: a NumPy transcription of ggml's
quantize_row_q8_0_ref (ggml-quants.c), written from its C source independently of posenc:

    for each block of 32:  amax = 0; for j: amax = MAX(amax, fabsf(x[j]))
                           d = amax / ((1 << 7) - 1); id = d ? 1.0f/d : 0.0f
                           y.d = GGML_FP32_TO_FP16(d)            (round to nearest even)
                           y.qs[j] = roundf(x[j] * id)            (halves away from zero)

every operation in float32 as C does it. The rows are rotated at position 0 by the test
(cos 1, sin 0: the rotation returns each element), so these are the bytes
posenc_rope_out_q8_0 must write for them. Output: one line per row of 64 floats (2 blocks):
the floats as float.hex(), ';', the 68 bytes in hex. Run: python3 q8_0_golden.py >
q8_0_golden.txt
"""
import numpy as np

F = np.float32


def quantize_block(x):
    amax = F(0)
    for v in x:
        a = F(abs(v))
        amax = amax if amax > a else a
    d = F(amax / F(127))
    inv = F(F(1) / d) if d != 0 else F(0)
    out = bytearray(np.array([d], np.float32).astype(np.float16).tobytes())
    for v in x:
        x0 = float(F(v * inv))  # one float32 product, widened exactly
        r = np.floor(abs(x0) + 0.5) * (1.0 if x0 >= 0 else -1.0)  # roundf, exact in double
        out += int(r).to_bytes(1, "little", signed=True)
    return out


def rows():
    rng = np.random.default_rng(20261203)
    out = []
    for scale in (1.0, 1e-3, 37.0, 1e4):
        out.append(rng.normal(0.0, scale, 64).astype(F))
    # amax 127 (d = 1, id = 1): halves round away from zero, both signs.
    ties = np.array([127.0, -0.5, 0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5, 0.49999997]
                    + [0.0] * 22, F)
    out.append(np.concatenate([ties, -ties[::-1]]))
    # a zero block (d = 0, id = 0, q = 0) and a block with one nonzero element
    one = np.zeros(32, F)
    one[17] = F(-3.25)
    out.append(np.concatenate([np.zeros(32, F), one]))
    # tiny and large magnitudes: d below the f16 range (stored 0) and near its top
    out.append(np.concatenate([rng.normal(0.0, 1e-30, 32).astype(F),
                               rng.normal(0.0, 1e6, 32).astype(F)]))
    # scale 1/3 steps: products near halves
    out.append((np.arange(64, dtype=F) - F(31)) * F(1.0 / 3.0))
    return out


def main():
    for row in rows():
        data = bytes(quantize_block(row[:32]) + quantize_block(row[32:]))
        print(" ".join(float(v).hex() for v in row) + " ; " + data.hex())


if __name__ == "__main__":
    main()
