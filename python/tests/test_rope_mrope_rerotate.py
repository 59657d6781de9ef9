"""Multimodal RoPE and re-rotation of cached keys against the NumPy oracle, on every ISA.

M-RoPE: each pair's angle from one of three position rows, assigned as HF transformers'
Qwen2-VL (consecutive mrope_section chunks) and Qwen3-VL (interleaved) recomposition code
does, written here independently. Re-rotation: keys rotated by (plan A, p) in float64 and
stored as float32, re-rotated to (plan B, p'), against float64 RoPE(B, p') of the same x.
Tolerances as in test_rope.py.
"""

import numpy as np
import posenc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oracle
from draws import normal_f32, seeds
from test_rope import ROPE_TOL, assert_rope_close


def hf_qwen2vl_rows(sections):
    """The position row of each pair: HF Qwen2-VL splits the R/2 frequencies into chunks of
    mrope_section and takes chunk j from row j % 3."""
    return np.concatenate([np.full(n, j % 3) for j, n in enumerate(sections)])


def hf_qwen3vl_rows(sections):
    """HF Qwen3-VL: row 0 everywhere, then rows 1 and 2 at slice(offset, 3 * s, 3)."""
    rows = np.zeros(sum(sections), dtype=int)
    for row in (1, 2):
        rows[row:3 * sections[row]:3] = row
    return rows


def mrope_cos_sin(pos3, freqs, rows, f32_angles):
    """cos/sin [L, R/2]: pair i at position pos3[rows[i], t]."""
    per_row = [oracle.cos_sin(pos3[r], freqs, f32_angles) for r in range(3)]
    cos = np.stack([per_row[r][0][:, i] for i, r in enumerate(rows)], axis=1)
    sin = np.stack([per_row[r][1][:, i] for i, r in enumerate(rows)], axis=1)
    return cos, sin


@st.composite
def mrope_case(draw):
    interleaved = draw(st.booleans())
    half = draw(st.sampled_from([64, 64, 8, 12, 21]))
    if interleaved:
        # s1, s2 with 3 s1 - 2 < half and 3 s2 - 1 < half.
        s1 = draw(st.integers(0, (half + 1) // 3))
        s2 = draw(st.integers(0, half // 3))
    else:
        s1 = draw(st.integers(0, half))
        s2 = draw(st.integers(0, half - s1))
    sections = [half - s1 - s2, s1, s2]
    n = draw(st.integers(0, 40))
    text = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    big = draw(st.booleans())
    lo, hi = (-2 ** 31 + 1, 2 ** 31 - 1) if big else (-100, 5000)
    pos3 = np.array(draw(st.lists(st.lists(st.integers(lo, hi), min_size=n, max_size=n),
                                  min_size=3, max_size=3)), dtype=np.int64).reshape(3, n)
    pos3[1:, np.array(text, dtype=bool)] = pos3[0, np.array(text, dtype=bool)]
    return dict(half=half, sections=sections, interleaved=interleaved, n=n, pos3=pos3,
                head_extra=draw(st.integers(0, 4)), n_q=draw(st.integers(1, 3)),
                n_k=draw(st.integers(0, 2)), base=draw(st.sampled_from([10000.0, 1e6])),
                att=draw(st.sampled_from([1.0, 0.8])),
                layout=draw(st.sampled_from(["neox", "gptj"])), inverse=draw(st.booleans()),
                f32_angles=draw(st.booleans()), seed=draw(seeds))


@given(case=mrope_case())
def test_mrope_matches_hf_definition(isa, case):
    posenc.set_isa(isa)
    rng = np.random.default_rng(case["seed"])
    n, r = case["n"], 2 * case["half"]
    d = r + case["head_extra"]
    q = normal_f32(rng, (n, case["n_q"], d))
    k = normal_f32(rng, (n, case["n_k"], d)) if case["n_k"] else None
    q0, k0 = q.copy(), None if k is None else k.copy()
    rows = (hf_qwen3vl_rows if case["interleaved"] else hf_qwen2vl_rows)(case["sections"])
    with posenc.RopePlan(r, case["base"], attention_factor=case["att"]) as plan:
        posenc.mrope(plan, case["sections"], q, k, positions=case["pos3"],
                     layout=case["layout"], interleaved=case["interleaved"],
                     inverse=case["inverse"], f32_angles=case["f32_angles"])
        freqs = plan.freqs
    cos, sin = mrope_cos_sin(case["pos3"], freqs, rows, case["f32_angles"])
    for actual, original in [(q, q0), (k, k0)]:
        if actual is None:
            continue
        expected, magnitude = oracle.rope(original, cos, sin, r, case["layout"],
                                          case["inverse"], case["att"])
        assert_rope_close(actual, expected, magnitude, case["att"], r, original)


def test_mrope_rejects_bad_sections():
    q = np.zeros((2, 1, 128), np.float32)
    pos3 = np.zeros((3, 2), np.int32)
    with posenc.RopePlan(128, 1e6) as plan:
        for sections, interleaved in [([16, 24, 23], False), ([16, 24, 25], False),
                                      ([0, 22, 42], True), ([24, 20, 21], True)]:
            with pytest.raises(posenc.PosencError):
                posenc.mrope(plan, sections, q, positions=pos3, interleaved=interleaved)
        with pytest.raises(ValueError):
            posenc.mrope(plan, [16, 24, 24], q, positions=np.zeros((2, 2), np.int32))
    np.testing.assert_array_equal(q, 0)


@st.composite
def rerotate_case(draw):
    half = draw(st.sampled_from([64, 48, 5]))
    n = draw(st.integers(0, 40))
    big = draw(st.booleans())
    lo, hi = (-2 ** 30, 2 ** 30) if big else (-100, 200000)
    p = np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype=np.int64)
    kind = draw(st.sampled_from(["shift", "shift", "factors", "base"]))
    shift = draw(st.integers(-5000, 5000))
    p2 = p + shift if kind == "shift" else p.copy()
    return dict(half=half, n=n, p=p, p2=p2, kind=kind, n_k=draw(st.integers(1, 3)),
                head_extra=draw(st.integers(0, 3)),
                layout=draw(st.sampled_from(["neox", "gptj"])),
                att=draw(st.sampled_from([(1.0, 1.0), (1.19, 1.19), (1.3, 0.7)])),
                seed=draw(seeds))


@given(case=rerotate_case())
def test_rerotate_matches_rotation_at_new_positions(isa, case):
    """k = RoPE(A, p)(x) rounded to float32; rerotate(A, p -> B, p') must be RoPE(B, p')(x)
    scaled by att_B / att_A, within the bound of one rotation of k plus the float32
    rounding of k itself (2^-24 (|u| + |v|) per element, rotated)."""
    posenc.set_isa(isa)
    rng = np.random.default_rng(case["seed"])
    n, r = case["n"], 2 * case["half"]
    d = r + case["head_extra"]
    x = normal_f32(rng, (n, case["n_k"], d))
    att_a, att_b = case["att"]
    freqs_a = oracle.default_freqs(r, 10000.0)
    if case["kind"] == "factors":  # LongRoPE short -> long: per-pair factors
        freqs_b = freqs_a / rng.uniform(1.0, 8.0, case["half"])
    elif case["kind"] == "base":  # a new dynamic-NTK base
        freqs_b = oracle.default_freqs(r, 10000.0 * 2.5)
    else:
        freqs_b = freqs_a
    plan_a = posenc.RopePlan.from_freqs(freqs_a, attention_factor=att_a)
    plan_b = posenc.RopePlan.from_freqs(freqs_b, attention_factor=att_b)
    cos_a, sin_a = oracle.exact_cos_sin(case["p"], plan_a.freqs)
    k64, _ = oracle.rope(x, cos_a, sin_a, r, case["layout"], att=att_a)
    k = k64.astype(np.float32)
    k_in = k.copy()
    posenc.rope_rerotate(plan_a, plan_b, k, from_positions=case["p"], to_positions=case["p2"],
                         layout=case["layout"])
    # The stored k rotated by the exact angle difference: a = p' w' - p w.
    angle_b = case["p2"].astype(oracle.LONG)[:, None] * np.asarray(plan_b.freqs, oracle.LONG)
    angle_a = case["p"].astype(oracle.LONG)[:, None] * np.asarray(plan_a.freqs, oracle.LONG)
    delta = angle_b - angle_a
    cos_d = np.cos(delta).astype(np.float64)
    sin_d = np.sin(delta).astype(np.float64)
    ratio = att_b / att_a
    expected, magnitude = oracle.rope(k_in, cos_d, sin_d, r, case["layout"], att=ratio)
    assert_rope_close(k, expected, magnitude, ratio, r, k_in)
    # And the meaning: RoPE(B, p')(x) * att_B, up to k's own float32 rounding.
    cos_b, sin_b = oracle.exact_cos_sin(case["p2"], plan_b.freqs)
    direct, mag_x = oracle.rope(x, cos_b, sin_b, r, case["layout"], att=att_b)
    err = np.abs(k[..., :r].astype(np.float64) - direct[..., :r])
    tol = (ROPE_TOL + 2.0 ** -23) * att_b * mag_x[..., :r] * 1.5 + 1e-37
    assert np.all(err <= tol), f"worst {np.max(err - tol):.3g}"


def test_rerotate_identity_and_errors():
    rng = np.random.default_rng(7)
    k = normal_f32(rng, (16, 2, 64))
    k0 = k.copy()
    with posenc.RopePlan(64, 10000.0) as plan, posenc.RopePlan(32, 10000.0) as other:
        posenc.rope_rerotate(plan, plan, k, from_start=100, to_start=100)
        np.testing.assert_array_equal(k, k0)  # angle of position 0: c = 1, s = 0 exactly
        with pytest.raises(posenc.PosencError):
            posenc.rope_rerotate(plan, other, k)
        with pytest.raises(posenc.PosencError):
            posenc.rope_rerotate(plan, plan, k, from_start=2 ** 31 - 10)
    np.testing.assert_array_equal(k, k0)
