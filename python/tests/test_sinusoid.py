"""Sinusoidal encodings against the NumPy oracle (seeds 000, 003, 004) on every ISA.

Tolerances (absolute):
  fill, timesteps: 2^-22, the header's bound on every value (accurate mode: vs sin/cos of the
                   exact product p * w_i with the plan's w_i; F32_ANGLES: vs sin/cos of the
                   float32 angle); the value is the float32 output, so its rounding is inside.
  add:             2^-22 + 2^-24 * (|x| + 1): the encoding's bound plus the one float32
                   rounding of x + PE (|x + PE| <= |x| + 1).
"""

import numpy as np
import posenc
from hypothesis import given
from hypothesis import strategies as st

import oracle
from draws import normal_f32, positions, seeds, token_counts

FILL_TOL = 2.0 ** -22
LAYOUTS = ["interleaved", "sin_cos", "cos_sin"]


def add_tol(x):
    return FILL_TOL + 2.0 ** -24 * (np.abs(x.astype(np.float64)) + 1.0)


@st.composite
def sinusoid_case(draw):
    n = draw(token_counts)
    return dict(dim=draw(st.integers(1, 70)), n=n,
                base=draw(st.sampled_from([10000.0, 10.0, 1e5])),
                layout=draw(st.sampled_from(LAYOUTS)), f32_angles=draw(st.booleans()),
                positions=draw(positions(n)), seed=draw(seeds))


@given(case=sinusoid_case())
def test_fill_matches_oracle(isa, case):
    posenc.set_isa(isa)
    pos_array, start, pos = case["positions"]
    plan = posenc.SinusoidPlan(case["dim"], case["base"])
    rows = case["n"] if pos_array is None else pos_array
    out = posenc.sinusoid_fill(plan, rows, start_pos=start, layout=case["layout"],
                               f32_angles=case["f32_angles"])
    assert out.shape == (case["n"], case["dim"]) and out.dtype == np.float32
    expected = oracle.sinusoid_table(pos, plan.freqs, case["dim"], case["layout"],
                                     case["f32_angles"])
    assert np.abs(out - expected).max(initial=0.0) <= FILL_TOL


@given(case=sinusoid_case())
def test_add_matches_oracle(isa, case):
    posenc.set_isa(isa)
    pos_array, start, pos = case["positions"]
    rng = np.random.default_rng(case["seed"])
    plan = posenc.SinusoidPlan(case["dim"], case["base"])
    x = normal_f32(rng, (case["n"], case["dim"]), scale=3.0)
    out = x.copy()
    posenc.sinusoid_add(plan, out, positions=pos_array, start_pos=start, layout=case["layout"],
                        f32_angles=case["f32_angles"])
    expected = x + oracle.sinusoid_table(pos, plan.freqs, case["dim"], case["layout"],
                                         case["f32_angles"])
    assert np.all(np.abs(out - expected) <= add_tol(x))


@given(dim=st.integers(1, 70), seed=seeds, n=st.integers(0, 40),
       layout=st.sampled_from(LAYOUTS), f32_angles=st.booleans())
def test_timesteps_match_oracle(isa, dim, seed, n, layout, f32_angles):
    """Float positions (diffusion timesteps), small and up to |t| < 2^31; the product t * w_i
    of a float32 t and a double w_i is exact in the oracle's long double to ~1e-10."""
    posenc.set_isa(isa)
    rng = np.random.default_rng(seed)
    t = np.concatenate([rng.uniform(0, 1000, n), rng.uniform(-2.1e9, 2.1e9, n),
                        rng.integers(0, 1000, n)]).astype(np.float32)
    plan = posenc.SinusoidPlan(dim)
    out = posenc.sinusoid_fill_timesteps(plan, t, layout=layout, f32_angles=f32_angles)
    expected = oracle.sinusoid_table(t, plan.freqs, dim, layout, f32_angles)
    assert np.abs(out - expected).max(initial=0.0) <= FILL_TOL


def test_plan_frequencies(rng):
    for dim, base in [(1, 10000.0), (512, 10000.0), (33, 10000.0), (64, 10.0)]:
        plan = posenc.SinusoidPlan(dim, base)
        assert plan.dim == dim
        expected = base ** (-2.0 * np.arange((dim + 1) // 2) / dim)  # w_i = base^(-2i/d)
        np.testing.assert_allclose(plan.freqs, expected, rtol=1e-14, atol=0)
    freqs = rng.uniform(0, 1, 4)
    assert posenc.SinusoidPlan.from_freqs(freqs).dim == 8
    odd = posenc.SinusoidPlan.from_freqs(freqs, dim=7)
    assert odd.dim == 7 and "dim=7" in repr(odd)
    np.testing.assert_array_equal(odd.freqs, freqs)


@given(seed=seeds, seq_len=st.integers(0, 60), offset=st.integers(0, 70000),
       half=st.integers(1, 40))
def test_seed000_forward(isa, seed, seq_len, offset, half):
    """Seed 000 SinusoidalEmbedding(_, d).forward(seq_len, offset): rows for positions
    [offset, offset + seq_len), frequencies exp(2i * -(ln 10000 / d)) from the oracle
    (|p w| < 2^17: their last-bit differences are < 1e-10 rad)."""
    posenc.set_isa(isa)
    d = 2 * half
    out = posenc.sinusoid_fill(posenc.SinusoidPlan(d), seq_len, start_pos=offset)
    assert np.abs(out - oracle.seed000_sinusoidal_forward(seq_len, offset, d)).max(
        initial=0.0) <= FILL_TOL + 1e-9


@given(seed=seeds, seq_len=st.integers(1, 60), half=st.integers(1, 40))
def test_seed003_apply_sinusoidal(isa, seed, seq_len, half):
    posenc.set_isa(isa)
    d = 2 * half
    x = normal_f32(np.random.default_rng(seed), (seq_len, d))
    expected = oracle.seed003_apply_sinusoidal(x.astype(np.float64),
                                               oracle.seed000_sinusoidal_forward(100, 0, d))
    out = x.copy()
    posenc.sinusoid_add(posenc.SinusoidPlan(d), out)
    assert np.all(np.abs(out - expected) <= add_tol(x) + 1e-9)


@given(seed=seeds, batch=st.integers(1, 3), seq_len=st.integers(1, 40), half=st.integers(1, 40))
def test_seed004_sinusoidal_forward(isa, seed, batch, seq_len, half):
    """Seed 004 SinusoidalPositionalEncoding.forward (no dropout) on x [B, L, D]: one call on
    the [B*L, D] view with positions 0..L-1 repeated per batch entry."""
    posenc.set_isa(isa)
    d = 2 * half
    x = normal_f32(np.random.default_rng(seed), (batch, seq_len, d))
    expected = oracle.seed004_sinusoidal_forward(x.astype(np.float64), d)
    out = x.copy()
    posenc.sinusoid_add(posenc.SinusoidPlan(d), out.reshape(batch * seq_len, d),
                        positions=np.tile(np.arange(seq_len, dtype=np.int32), batch))
    assert np.all(np.abs(out - expected) <= add_tol(x) + 1e-9)
