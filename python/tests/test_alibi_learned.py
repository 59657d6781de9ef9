"""ALiBi and learned embeddings against the NumPy oracle (seeds 000, 003) on every ISA.

Both are exact by the header's contract (the same float operations in the same order on every
variant), so the comparisons with the oracle's float32 recipe are bit for bit. The seeds'
own float64 arithmetic is compared within its float32 rounding (stated per test).
"""

import ctypes
import ctypes.util

import numpy as np
import pytest
import posenc
from hypothesis import given
from hypothesis import strategies as st

import oracle
from draws import normal_f32, seeds

ULP32 = 2.0 ** -23  # relative spacing of float32 numbers


def assert_bits_equal(actual, expected):
    """Equal as float32 bit patterns (so -0.0 != 0.0, -inf == -inf)."""
    assert actual.dtype == expected.dtype == np.float32
    np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))


# --- ALiBi ----------------------------------------------------------------------------------

@given(n=st.integers(1, 300))
def test_slopes_seed000(n):
    """Seed 000 _get_slopes(n) (max_bias 8): both are doubles rounded to float32, computed by
    different formulas, so the header allows them to differ by one float32 rounding (measured:
    bit-identical for every n <= 2048)."""
    seed = oracle.seed000_get_slopes(n).astype(np.float64)
    np.testing.assert_allclose(posenc.alibi_slopes(n), seed, rtol=ULP32, atol=0)


@given(n=st.integers(1, 200), max_bias=st.floats(0.25, 16.0))
def test_slopes_max_bias(n, max_bias):
    """The header's formula with max_bias in float64; one float32 rounding apart at most."""
    np.testing.assert_allclose(posenc.alibi_slopes(n, max_bias=max_bias), oracle.slopes_float64(n, max_bias),
                               rtol=ULP32, atol=0)


def _ggml_slopes(n, max_bias):
    """ggml-cpu's soft_max slopes, transcribed: float32 quotients (NumPy) and the C library's
    powf, which ggml calls (NumPy's own float32 power may use other code)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.powf.restype = ctypes.c_float
    libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]
    f = np.float32
    c = 1 << int(np.floor(np.log2(n)))
    m0 = f(libm.powf(2.0, float(-f(max_bias) / f(c))))
    m1 = f(libm.powf(2.0, float(-(f(max_bias) / f(2)) / f(c))))
    if not f(max_bias) > 0:
        return np.ones(n, np.float32)
    return np.array([libm.powf(m0, h + 1) if h < c else libm.powf(m1, 2 * (h - c) + 1)
                     for h in range(n)], np.float32)


@given(n=st.integers(1, 200), max_bias=st.sampled_from([0.0, 0.5, 1.0, 8.0, 16.0, 3.7]))
def test_slopes_ggml(n, max_bias):
    """posenc_alibi_slopes_ggml: ggml's float32 steps, bit for bit."""
    got = posenc.alibi_slopes(n, max_bias=max_bias, ggml=True)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), _ggml_slopes(n, max_bias).view(np.uint32))


def test_slopes_ggml_refusals():
    for n, max_bias in [(0, 8.0), (8, -1.0), (8, float("nan")), (8, float("inf"))]:
        with pytest.raises(ValueError):
            posenc.alibi_slopes(n, max_bias=max_bias, ggml=True)


@given(heads=st.integers(1, 12), seq_len=st.integers(0, 70))
def test_bias_is_seed000_get_bias(isa, heads, seq_len):
    """Seed 000 get_bias(L)[0] rounded to float32, bit for bit (with -0.0 on the diagonal):
    the seed's float64 product of a float32 slope and an integer distance is exact."""
    posenc.set_isa(isa)
    slopes = oracle.seed000_get_slopes(heads)
    expected = oracle.seed000_get_bias(slopes, seq_len)[0].astype(np.float32)
    assert_bits_equal(posenc.alibi_bias(slopes, seq_len, seq_len), expected)


@st.composite
def alibi_case(draw):
    return dict(heads=draw(st.integers(1, 9)), n_q=draw(st.integers(0, 20)),
                n_k=draw(st.integers(0, 90)),
                q_offset=draw(st.one_of(st.integers(0, 100), st.integers(0, 2 ** 31 - 200))),
                scale=draw(st.sampled_from([1.0, 0.125, 0.0883883476])),
                causal=draw(st.booleans()), seed=draw(seeds))


@given(case=alibi_case())
def test_alibi_add_and_bias_exact(isa, case):
    posenc.set_isa(isa)
    rng = np.random.default_rng(case["seed"])
    slopes = rng.uniform(0.001, 1.0, case["heads"]).astype(np.float32)
    scores = normal_f32(rng, (case["heads"], case["n_q"], case["n_k"]), scale=10.0)
    out = scores.copy()
    posenc.alibi_add(out, slopes, q_offset=case["q_offset"], scale=case["scale"],
                     causal=case["causal"])
    assert_bits_equal(out, oracle.alibi_add_f32(scores, slopes, case["q_offset"],
                                                case["scale"], case["causal"]))
    bias = posenc.alibi_bias(slopes, case["n_q"], case["n_k"], q_offset=case["q_offset"],
                             causal=case["causal"])
    assert_bits_equal(bias, oracle.alibi_bias_f32(slopes, case["n_q"], case["n_k"],
                                                  case["q_offset"], case["causal"]))


@given(seed=seeds, heads=st.integers(1, 12), seq_len=st.integers(1, 50))
def test_seed003_apply_alibi(isa, seed, heads, seq_len):
    """Seed 003 apply_alibi(scores, seed 000 get_bias) in float64 vs posenc's float32 result:
    two float32 roundings apart at most (the bias product, then the sum)."""
    posenc.set_isa(isa)
    scores = normal_f32(np.random.default_rng(seed), (heads, seq_len, seq_len), scale=5.0)
    bias = oracle.seed000_get_bias(oracle.seed000_get_slopes(heads), seq_len)[0]
    expected = oracle.seed003_apply_alibi(scores.astype(np.float64), bias)
    out = scores.copy()
    posenc.alibi_add(out, posenc.alibi_slopes(heads))
    tol = 2.0 ** -24 * (np.abs(bias) + np.abs(expected))
    assert np.all(np.abs(out - expected) <= tol)


def test_alibi_decode_row(isa, rng):
    """KV-cache decode: one query row at position n_k - 1 against n_k keys is the last row of
    the full bias."""
    posenc.set_isa(isa)
    slopes = posenc.alibi_slopes(8)
    full = posenc.alibi_bias(slopes, 33, 33)
    row = posenc.alibi_bias(slopes, 1, 33, q_offset=32)
    assert_bits_equal(row[:, 0, :], full[:, -1, :])


# --- learned --------------------------------------------------------------------------------

@given(seed=seeds, max_pos=st.integers(1, 80), dim=st.integers(0, 70),
       n=st.integers(0, 40), mode=st.sampled_from(["start", "array"]))
def test_learned_add_exact(isa, seed, max_pos, dim, n, mode):
    """x[t] += table[pos_t]: one float32 addition per element, bit for bit."""
    posenc.set_isa(isa)
    rng = np.random.default_rng(seed)
    table = normal_f32(rng, (max_pos, dim))
    x = normal_f32(rng, (n, dim))
    if mode == "array":
        pos = rng.integers(0, max_pos, n)
        out = x.copy()
        posenc.learned_add(table, out, positions=pos)  # int64 positions, converted
    else:
        n = min(n, max_pos)
        x = x[:n]
        start = int(rng.integers(0, max_pos - n + 1))
        pos = start + np.arange(n)
        out = x.copy()
        posenc.learned_add(table, out, start_pos=start)
    assert_bits_equal(out, x + table[pos])


@given(seed=seeds, seq_len=st.integers(0, 30), dim=st.integers(1, 64))
def test_seed003_apply_learned(isa, seed, seq_len, dim):
    posenc.set_isa(isa)
    rng = np.random.default_rng(seed)
    table = normal_f32(rng, (seq_len + 5, dim))
    x = normal_f32(rng, (seq_len, dim))
    out = x.copy()
    posenc.learned_add(table, out)
    assert_bits_equal(out, oracle.seed003_apply_learned(x, table))
