"""RoPE against the NumPy oracle (seeds 000, 003, 004 and the header's formula) on every ISA.

Tolerance, per element of a rotated pair (u, v), relative to att * (|u| + |v|):
  2^-22  the header's bound on c and s (accurate mode: vs cos/sin of the exact product
         p * w_i; F32_ANGLES: vs cos/sin of the float32 angle), times |u| + |v|;
+ 2^-23  the float32 arithmetic of u*c - v*s (two products and a sum, each within 2^-24 of
         its value: at most 2^-24 (|u c| + |v s|) + 2^-24 |u'|).
Elements past rotary_dim must come back bit for bit.
"""

import numpy as np
import posenc
from hypothesis import given
from hypothesis import strategies as st

import oracle
from draws import normal_f32, positions, seeds, token_counts

ROPE_TOL = 2.0 ** -22 + 2.0 ** -23
SIMD_TOL = 2.0 ** -20  # POSENC_ROPE_SIMD_TOLERANCE: a variant vs the scalar one


def assert_rope_close(actual, expected, magnitude, att, rotary_dim, original):
    """expected/magnitude from oracle.rope; untouched tail compared bit for bit."""
    tol = ROPE_TOL * att * magnitude + 1e-37
    err = np.abs(actual[..., :rotary_dim].astype(np.float64) - expected[..., :rotary_dim])
    worst = np.max(err - tol[..., :rotary_dim], initial=-1.0)
    assert worst <= 0, f"RoPE error exceeds tolerance by {worst:.3g} (max err {err.max():.3g})"
    np.testing.assert_array_equal(actual[..., rotary_dim:], original[..., rotary_dim:])


@st.composite
def rope_case(draw):
    half = draw(st.integers(1, 40))
    rotary_dim = 2 * half
    n = draw(token_counts)
    return dict(
        rotary_dim=rotary_dim, head_dim=rotary_dim + draw(st.integers(0, 5)), n=n,
        n_q=draw(st.integers(1, 4)), n_k=draw(st.integers(0, 3)),
        base=draw(st.sampled_from([10000.0, 500000.0, 1e6, 100.0])),
        att=draw(st.sampled_from([1.0, 1.0, 0.5, 1.2247])),
        layout=draw(st.sampled_from(["neox", "gptj"])), inverse=draw(st.booleans()),
        f32_angles=draw(st.booleans()), positions=draw(positions(n)), seed=draw(seeds))


@given(case=rope_case())
def test_rope_matches_oracle(isa, case):
    posenc.set_isa(isa)
    rng = np.random.default_rng(case["seed"])
    n, d, r = case["n"], case["head_dim"], case["rotary_dim"]
    q = normal_f32(rng, (n, case["n_q"], d))
    k = normal_f32(rng, (n, case["n_k"], d)) if case["n_k"] else None
    q0, k0 = q.copy(), None if k is None else k.copy()
    pos_array, start, pos = case["positions"]
    with posenc.RopePlan(r, case["base"], attention_factor=case["att"]) as plan:
        freqs = plan.freqs  # the contract is relative to the plan's doubles
        posenc.rope(plan, q, k, positions=pos_array, start_pos=start, layout=case["layout"],
                    inverse=case["inverse"], f32_angles=case["f32_angles"])
    cos, sin = oracle.cos_sin(pos, freqs, case["f32_angles"])
    for actual, original in [(q, q0), (k, k0)]:
        if actual is None:
            continue
        expected, magnitude = oracle.rope(original, cos, sin, r, case["layout"],
                                          case["inverse"], case["att"])
        assert_rope_close(actual, expected, magnitude, case["att"], r, original)


@given(case=rope_case())
def test_rope_variant_matches_scalar(isa, case):
    """The header's POSENC_ROPE_SIMD_TOLERANCE: every variant within 2^-20 att (|u| + |v|) of
    the scalar variant's output."""
    rng = np.random.default_rng(case["seed"])
    n, d, r = case["n"], case["head_dim"], case["rotary_dim"]
    q = normal_f32(rng, (n, case["n_q"], d))
    pos_array, start, _ = case["positions"]
    results = []
    with posenc.RopePlan(r, case["base"], attention_factor=case["att"]) as plan:
        for variant in ["scalar", isa]:
            posenc.set_isa(variant)
            out = q.copy()
            posenc.rope(plan, out, positions=pos_array, start_pos=start, layout=case["layout"],
                        inverse=case["inverse"], f32_angles=case["f32_angles"])
            results.append(out.astype(np.float64))
    _, magnitude = oracle.rope(q, np.zeros((n, r // 2)), np.zeros((n, r // 2)), r,
                               case["layout"])
    assert np.all(np.abs(results[0] - results[1]) <= SIMD_TOL * case["att"] * magnitude)


def test_plan_frequencies(rng):
    for rotary_dim, base in [(2, 10000.0), (128, 10000.0), (64, 500000.0), (96, 1e6), (6, 3.5)]:
        plan = posenc.RopePlan(rotary_dim, base, attention_factor=0.75)
        assert plan.rotary_dim == rotary_dim and plan.attention_factor == 0.75
        # "computed in double": a few ulps from NumPy's float64 formula.
        np.testing.assert_allclose(plan.freqs, oracle.default_freqs(rotary_dim, base),
                                   rtol=1e-14, atol=0)
    freqs = rng.uniform(-2.0, 2.0, 7)
    freqs[3] = 0.0
    plan = posenc.RopePlan.from_freqs(freqs, attention_factor=2.0)
    assert plan.rotary_dim == 14 and plan.attention_factor == 2.0
    np.testing.assert_array_equal(plan.freqs, freqs)
    assert "rotary_dim=14" in repr(plan)


@given(seed=seeds, batch=st.integers(1, 3), heads=st.integers(1, 4),
       seq_len=st.integers(1, 40), half=st.integers(1, 32), offset=st.integers(0, 70000))
def test_seed000_apply_rope_and_backward(isa, seed, batch, heads, seq_len, half, offset):
    """Seed 000 RotaryEmbedding(dim).apply_rope(x, offset) and backward_rope on
    x [B, H, L, D] (rotate-half, full rotary), frequencies 1 / base^(2i/dim) computed by the
    oracle itself (|p w| < 2^17: a few float64 ulps of w are < 1e-10 rad)."""
    posenc.set_isa(isa)
    rng = np.random.default_rng(seed)
    dim = 2 * half
    x = normal_f32(rng, (batch, heads, seq_len, dim))
    cos, sin = oracle.exact_cos_sin(np.arange(offset, offset + seq_len),
                                    oracle.default_freqs(dim, 10000.0))
    plan = posenc.RopePlan(dim)
    for inverse, formula in [(False, oracle.seed000_apply_rope),
                             (True, oracle.seed000_backward_rope)]:
        expected = formula(x.astype(np.float64), cos, sin)
        out = x.copy()
        for b in range(batch):  # [H, L, D] storage as a [L, H, D] view
            posenc.rope(plan, out[b].transpose(1, 0, 2), start_pos=offset, inverse=inverse)
        magnitude = np.abs(x) + np.abs(oracle._rotate_half(x))
        assert np.all(np.abs(out - expected) <= ROPE_TOL * magnitude + 1e-37)


@given(seed=seeds, seq_len=st.integers(1, 40), half=st.integers(1, 32),
       start=st.integers(0, 70000))
def test_seed003_apply_rope_interleaved(isa, seed, seq_len, half, start):
    """Seed 003 apply_rope(q, k, cos, sin): interleaved pairs, returned de-interleaved;
    posenc's GPTJ layout keeps each pair in place, so out[..., 0::2] is the seed's first half
    and out[..., 1::2] its second half."""
    posenc.set_isa(isa)
    rng = np.random.default_rng(seed)
    dim = 2 * half
    q, k = normal_f32(rng, (seq_len, dim)), normal_f32(rng, (seq_len, dim))
    cos, sin = oracle.exact_cos_sin(np.arange(start, start + seq_len),
                                    oracle.default_freqs(dim, 10000.0))
    q_seed, k_seed = oracle.seed003_apply_rope(q.astype(np.float64), k.astype(np.float64),
                                               cos, sin)
    q_out, k_out = q.copy(), k.copy()
    posenc.rope(posenc.RopePlan(dim), q_out[:, None, :], k_out[:, None, :], start_pos=start,
                layout="gptj")
    for out, seed_out, original in [(q_out, q_seed, q), (k_out, k_seed, k)]:
        pair = np.abs(original[:, 0::2]) + np.abs(original[:, 1::2])
        assert np.all(np.abs(out[:, 0::2] - seed_out[:, :half]) <= ROPE_TOL * pair + 1e-37)
        assert np.all(np.abs(out[:, 1::2] - seed_out[:, half:]) <= ROPE_TOL * pair + 1e-37)


@given(seed=seeds, batch=st.integers(1, 2), heads=st.integers(1, 4), seq_len=st.integers(1, 40),
       half=st.integers(1, 32))
def test_seed004_rope_bhld(isa, seed, batch, heads, seq_len, half):
    """Seed 004 apply_rotary_pos_emb on q, k [B, H, L, D], positions 0..L-1; each batch
    entry is an [H, L, D] block, rotated through its [L, H, D] view (token stride D, head
    stride L*D), q and k in one call."""
    posenc.set_isa(isa)
    rng = np.random.default_rng(seed)
    dim = 2 * half
    shape = (batch, heads, seq_len, dim)
    q, k = normal_f32(rng, shape), normal_f32(rng, shape)
    cos, sin = oracle.exact_cos_sin(np.arange(seq_len), oracle.default_freqs(dim, 10000.0))
    q_ref, k_ref = oracle.seed004_apply_rotary_pos_emb(q.astype(np.float64),
                                                       k.astype(np.float64), cos, sin)
    q_out, k_out = q.copy(), k.copy()
    plan = posenc.RopePlan(dim)
    for b in range(batch):
        posenc.rope(plan, q_out[b].transpose(1, 0, 2), k_out[b].transpose(1, 0, 2))
    for out, ref, original in [(q_out, q_ref, q), (k_out, k_ref, k)]:
        magnitude = np.abs(original) + np.abs(oracle._rotate_half(original))
        assert np.all(np.abs(out - ref) <= ROPE_TOL * magnitude + 1e-37)


def test_inverse_undoes_forward(isa, rng):
    posenc.set_isa(isa)
    x = normal_f32(rng, (300, 3, 70))
    out = x.copy()
    plan = posenc.RopePlan(64, 500000.0)
    positions = rng.integers(-2 ** 31 + 1, 2 ** 31, 300).astype(np.int32)
    for layout in ["neox", "gptj"]:
        posenc.rope(plan, out, positions=positions, layout=layout)
        posenc.rope(plan, out, positions=positions, layout=layout, inverse=True)
    np.testing.assert_allclose(out, x, rtol=0, atol=4 * ROPE_TOL * np.abs(x).max() * 2)


def test_long_context_accuracy_beats_float32_recipe(isa):
    """At position 131072 the float32 angle recipe is off by ~1e-2 rad; accurate mode is
    within the bound. A unit vector (1, 0) makes the output (c, s) itself."""
    posenc.set_isa(isa)
    plan = posenc.RopePlan(128, 10000.0)
    pos = np.array([131072, 2 ** 31 - 1, -(2 ** 31 - 1)], np.int32)
    cos, sin = oracle.exact_cos_sin(pos, plan.freqs)
    for f32_angles, bound in [(False, ROPE_TOL), (True, None)]:
        x = np.zeros((3, 1, 128), np.float32)
        x[..., :64] = 1.0
        posenc.rope(plan, x, positions=pos, f32_angles=f32_angles)
        err = max(np.abs(x[:, 0, :64] - cos).max(), np.abs(x[:, 0, 64:] - sin).max())
        if bound is None:
            assert err > 1e-3
        else:
            assert err <= bound
