"""Runtime-shaped RoPE (posenc_rope_out, posenc_mrope_out, rotation factors) and ggml plans,
on every ISA.

rope_out / mrope_out are checked bit for bit against the in-place rope() / mrope() of the
same ISA, called batch by batch on a float32 copy of the source: the header promises that
every rotated element is the in-place f32 result for that position (for a 16-bit source:
the in-place 16-bit result, itself the f32 result on the widened input rounded once),
rounded to dst's type. The widening and rounding here are independent of the library:
float16 through NumPy's conversions (round to nearest even, IEEE overflow and subnormals),
bfloat16 bits by the integer round-to-nearest-even below. The factor path must equal
rope_out bit for bit. ggml plans: frequencies and attention factor against the golden file
(tests/data/ggml_rope_golden.txt, a float64 transcription of ggml's rope) and a NumPy
evaluation of the YaRN formula of that script's docstring, within the C test's bounds.
"""

import functools
import math
from pathlib import Path

import numpy as np
import posenc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from draws import normal_f32, seeds

INVALID = "invalid argument"
PAIRS = [("f32", "f32"), ("f32", "bf16"), ("f32", "f16"), ("bf16", "bf16"), ("f16", "f16")]
UNSUPPORTED = [("bf16", "f32"), ("f16", "f32"), ("bf16", "f16"), ("f16", "bf16")]
GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "data" / "ggml_rope_golden.txt"


# --- independent 16-bit conversions ---------------------------------------------------------

def bf16_bits(x):
    """float32 -> bfloat16 bits (uint16), round to nearest, ties to even; NaN stays NaN."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    one, half, sixteen = np.uint64(1), np.uint64(0x7FFF), np.uint64(16)  # NumPy 1.x casting
    rounded = (u + half + ((u >> sixteen) & one)) >> sixteen
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, (u >> sixteen) | np.uint64(0x40), rounded).astype(np.uint16)


def bf16_widen(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def test_bf16_rounding_helper():
    """The test's own bf16 rounding: ties to even, overflow to infinity, exact values kept."""
    cases = {0x3F808000: 0x3F80, 0x3F818000: 0x3F82, 0x3F808001: 0x3F81, 0x3F807FFF: 0x3F80,
             0x7F7FFFFF: 0x7F80, 0xFF7FFFFF: 0xFF80, 0x00000001: 0x0000, 0x3F800000: 0x3F80,
             0x80008000: 0x8000, 0x00018000: 0x0002}
    x = np.array(list(cases), np.uint32).view(np.float32)
    np.testing.assert_array_equal(bf16_bits(x), np.array(list(cases.values()), np.uint16))
    assert np.isnan(bf16_widen(bf16_bits(np.float32("nan"))))


def make_source(rng, shape, kind, scale=1.0):
    """(array of storage type `kind`, its values widened to float32)."""
    x = normal_f32(rng, shape, scale)
    if kind == "f32":
        return x, x.copy()
    if kind == "f16":  # finite: a NaN's payload after rotation is not specified
        h = np.clip(x, -65504, 65504).astype(np.float16)
        return h, h.astype(np.float32)
    bits = bf16_bits(x)
    return bits, bf16_widen(bits)


def narrow(x, kind):
    """float32 -> the storage type (float32, float16, bfloat16 bits)."""
    if kind == "f32":
        return x
    if kind == "f16":
        with np.errstate(over="ignore"):  # to infinity, as IEEE and the library round
            return x.astype(np.float16)
    return bf16_bits(x)


def bits(a):
    """The raw bits of an array (NaN payloads and signed zeros compared exactly)."""
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def assert_bitwise(actual, expected):
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(bits(actual), bits(expected))


def stored(x, axes):
    """x [B, L, H, D] (or [L, H, D]) stored in the order axes names, C-contiguous; and the
    permutation back to that logical order."""
    logical = "BLHD" if x.ndim == 4 else "LHD"
    perm = [logical.index(letter) for letter in axes]
    return np.ascontiguousarray(x.transpose(perm)), tuple(np.argsort(perm))


def rope_reference(plan, x32, positions, start_pos, dst_kind, mrope=None, **flags):
    """The in-place rope() (or mrope(plan, sections, ..., interleaved)) of each batch of the
    float32 [B, L, H, D] x32, rounded to dst_kind. positions: [B, L] (or (3, B, L) for
    M-RoPE) or None for start_pos + t."""
    out = x32.copy()
    for b in range(out.shape[0]):
        if mrope is not None:
            sections, interleaved = mrope
            posenc.mrope(plan, sections, out[b], positions=positions[:, b],
                         interleaved=interleaved, **flags)
        else:
            posenc.rope(plan, out[b], positions=None if positions is None else positions[b],
                        start_pos=start_pos, **flags)
    return narrow(out, dst_kind)


# --- rope_out, mrope_out ---------------------------------------------------------------------

@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("axes", ["BLHD", "BHLD"])
@pytest.mark.parametrize("layout", ["neox", "gptj"])
def test_rope_out_matches_in_place(isa, pair, axes, layout):
    posenc.set_isa(isa)
    src_kind, dst_kind = pair
    rng = np.random.default_rng(7)
    shape = (3, 37, 2, 70)  # B, L, H, D: rotary_dim 64 < head_dim
    src_logical, x32 = make_source(rng, shape, src_kind)
    positions = rng.integers(-5000, 100000, shape[:2])  # per (batch, token)
    src, back = stored(src_logical, axes)
    original = src.copy()
    with posenc.RopePlan(64, 500000.0, attention_factor=1.25) as plan:
        expected = rope_reference(plan, x32, positions, 0, dst_kind, layout=layout)
        dst = posenc.rope_out(plan, src, positions=positions, axes=axes, layout=layout,
                              dst_dtype=dst_kind)
    assert_bitwise(dst.transpose(back), expected)
    assert_bitwise(src, original)  # the source is only read
    assert dst.dtype == {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[dst_kind]


@st.composite
def out_case(draw):
    half = draw(st.integers(1, 40))
    n_batch = draw(st.integers(1, 3))
    n_tokens = draw(st.one_of(st.integers(0, 12), st.integers(60, 140)))
    kind = draw(st.sampled_from(["start", "per_batch", "shared"]))
    return dict(pair=draw(st.sampled_from(PAIRS)), axes=draw(st.sampled_from(["BLHD", "BHLD",
                                                                                "LBHD", "LHD",
                                                                                "HLD"])),
                half=half, extra=draw(st.integers(0, 5)), n_batch=n_batch, n_tokens=n_tokens,
                n_heads=draw(st.integers(0, 3)), kind=kind,
                start=draw(st.integers(-2 ** 31, 2 ** 31 - 1 - n_tokens)),
                base=draw(st.sampled_from([10000.0, 1e6, 100.0])),
                att=draw(st.sampled_from([1.0, 0.75])),
                layout=draw(st.sampled_from(["neox", "gptj"])), inverse=draw(st.booleans()),
                f32_angles=draw(st.booleans()), given_dst=draw(st.booleans()),
                scale=draw(st.sampled_from([1.0, 1.0, 3e4, 1e-6])), seed=draw(seeds))


@given(case=out_case())
def test_rope_out_random_shapes(isa, case):
    """Any shape, axis order (3-D included), positions given per (b, t), shared by every
    batch or a run, and a caller's strided dst (elements between heads untouched). Scale 3e4
    sends float16 results to infinity, 1e-6 to float16 subnormals."""
    posenc.set_isa(isa)
    rng = np.random.default_rng(case["seed"])
    src_kind, dst_kind = case["pair"]
    axes, r = case["axes"], 2 * case["half"]
    n_batch = case["n_batch"] if len(axes) == 4 else 1
    shape = (n_batch, case["n_tokens"], case["n_heads"], r + case["extra"])
    src_logical, x32 = make_source(rng, shape, src_kind, case["scale"])
    pos = None
    if case["kind"] == "per_batch":
        pos = rng.integers(-2 ** 31 + 1, 2 ** 31 - 1, shape[:2]).astype(np.int32)
        call_pos = pos if len(axes) == 4 else pos[0]
    elif case["kind"] == "shared":
        call_pos = rng.integers(-3000, 3000, shape[1])
        pos = np.broadcast_to(call_pos, shape[:2])
    start = case["start"] if pos is None else 0
    if len(axes) == 3:
        src_logical = src_logical[0]
    src, back = stored(src_logical, axes)
    flags = dict(layout=case["layout"], inverse=case["inverse"], f32_angles=case["f32_angles"])
    dst = None
    if case["given_dst"]:  # a padded buffer: dst a strided view into it
        storage = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[dst_kind]
        padded = np.full(src.shape[:-1] + (src.shape[-1] + 3,), 7, storage)
        dst = padded[..., 1:src.shape[-1] + 1]
    with posenc.RopePlan(r, case["base"], attention_factor=case["att"]) as plan:
        expected = rope_reference(plan, x32, pos, start, dst_kind, **flags)
        out = posenc.rope_out(plan, src, dst=dst, positions=None if pos is None else call_pos,
                              start_pos=start, axes=axes, dst_dtype=dst_kind, **flags)
    if len(axes) == 3:
        expected = expected[0]
    assert_bitwise(out.transpose(back), expected)
    if dst is not None:
        assert out is dst
        np.testing.assert_array_equal(padded[..., 0], 7)
        np.testing.assert_array_equal(padded[..., -2:], 7)


def test_rope_out_in_place_and_broadcast_source(isa):
    """dst is src rotates in place; a broadcast source (batch stride 0) is read for every
    batch; dst None keeps src's 16-bit representation."""
    # 4-D arrays name their axes (no default): [B, L, H, D] here
    rope_out = functools.partial(posenc.rope_out, axes="BLHD")
    posenc.set_isa(isa)
    rng = np.random.default_rng(11)
    x = normal_f32(rng, (2, 9, 4, 32))
    pos = rng.integers(0, 4096, (2, 9))
    with posenc.RopePlan(32) as plan:
        expected = rope_out(plan, x, positions=pos)
        y = x.copy()
        assert rope_out(plan, y, dst=y, positions=pos) is y
        assert_bitwise(y, expected)
        one = normal_f32(rng, (9, 4, 32))
        shared = np.broadcast_to(one, (3, 9, 4, 32))
        out = rope_out(plan, shared, start_pos=100)
        single = one.copy()
        posenc.rope(plan, single, start_pos=100)
        for b in range(3):
            assert_bitwise(out[b], single)
        h = one.astype(np.float16).view(np.uint16)  # float16 bits in uint16
        out16 = posenc.rope_out(plan, h, src_dtype="f16", start_pos=3)
        assert out16.dtype == np.uint16
        direct = posenc.rope_out(plan, h.view(np.float16), start_pos=3)
        assert_bitwise(out16, direct.view(np.uint16))
        given = np.zeros_like(h)  # a uint16 dst takes the 16-bit type of the source
        posenc.rope_out(plan, h, dst=given, src_dtype="float16", start_pos=3)
        assert_bitwise(given, out16)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("axes", ["BLHD", "BHLD"])
@pytest.mark.parametrize("interleaved", [False, True])
def test_mrope_out_matches_in_place(isa, pair, axes, interleaved):
    posenc.set_isa(isa)
    src_kind, dst_kind = pair
    rng = np.random.default_rng(5)
    shape = (2, 23, 3, 130)
    sections = [24, 20, 20] if interleaved else [16, 24, 24]
    src_logical, x32 = make_source(rng, shape, src_kind)
    pos3 = rng.integers(0, 5000, (3,) + shape[:2])
    pos3[1:, :, :5] = pos3[0, :, :5]  # some text tokens
    src, back = stored(src_logical, axes)
    original = src.copy()
    for layout in ["neox", "gptj"]:
        with posenc.RopePlan(128, 1e6) as plan:
            expected = rope_reference(plan, x32, pos3, 0, dst_kind, (sections, interleaved),
                                      layout=layout)
            dst = posenc.mrope_out(plan, sections, src, positions=pos3, axes=axes,
                                   layout=layout, interleaved=interleaved, dst_dtype=dst_kind)
            assert_bitwise(dst.transpose(back), expected)
            factors = posenc.mrope_factors(plan, sections, positions=pos3, layout=layout,
                                           interleaved=interleaved)
            assert factors.n_rows == shape[0] * shape[1]
            assert_bitwise(posenc.rope_apply(factors, src, axes=axes, dst_dtype=dst_kind), dst)
            # (3, L) positions: the same for every batch
            shared = posenc.mrope_out(plan, sections, src, positions=pos3[:, 0], axes=axes,
                                      layout=layout, interleaved=interleaved,
                                      dst_dtype=dst_kind)
            expected_shared = rope_reference(
                plan, x32, np.broadcast_to(pos3[:, :1], pos3.shape), 0, dst_kind,
                (sections, interleaved), layout=layout)
            assert_bitwise(shared.transpose(back), expected_shared)
    assert_bitwise(src, original)


# --- rotation factors ------------------------------------------------------------------------

@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("axes", ["BLHD", "BHLD"])
def test_factors_match_rope_out(isa, pair, axes):
    posenc.set_isa(isa)
    src_kind, dst_kind = pair
    rng = np.random.default_rng(3)
    shape = (3, 70, 2, 100)  # rotary_dim 96: NEOX rows padded to multiples of 16 floats
    src_logical, _ = make_source(rng, shape, src_kind)
    src, _ = stored(src_logical, axes)
    original = src.copy()
    pos = rng.integers(-10 ** 6, 10 ** 6, shape[:2])
    with posenc.RopePlan(96, 10000.0, attention_factor=0.9) as plan:
        for layout in ["neox", "gptj"]:
            for f32_angles in [False, True]:
                kw = dict(axes=axes, dst_dtype=dst_kind)
                factors = posenc.rope_factors(plan, positions=pos, layout=layout,
                                              f32_angles=f32_angles)
                assert (factors.n_rows, factors.rotary_dim, factors.layout) == \
                    (shape[0] * shape[1], 96, layout)
                assert factors.storage.ctypes.data % 64 == 0
                for inverse in [False, True]:
                    flags = dict(layout=layout, inverse=inverse, f32_angles=f32_angles)
                    want = posenc.rope_out(plan, src, positions=pos, **flags, **kw)
                    got = posenc.rope_apply(factors, src, inverse=inverse, **kw)
                    assert_bitwise(got, want)
                # a run shared by every batch: row_batch_stride 0, first_row, a sub-range
                run = posenc.rope_factors(plan, start_pos=-40, n_rows=80, layout=layout,
                                          f32_angles=f32_angles)
                want = posenc.rope_out(plan, src, start_pos=-30, layout=layout,
                                       f32_angles=f32_angles, **kw)
                assert_bitwise(posenc.apply(run, src, first_row=10, row_batch_stride=0, **kw),
                               want)
                assert_bitwise(posenc.apply(run.rows(10, 70), src, row_batch_stride=0, **kw),
                               want)
    assert_bitwise(src, original)


def test_factors_in_place_and_reused_storage(isa):
    # 4-D arrays name their axes (no default): [B, L, H, D] here
    rope_out = functools.partial(posenc.rope_out, axes="BLHD")
    rope_apply = functools.partial(posenc.rope_apply, axes="BLHD")
    posenc.set_isa(isa)
    rng = np.random.default_rng(4)
    x = normal_f32(rng, (2, 8, 3, 64))
    pos = rng.integers(0, 1000, (2, 8))
    with posenc.RopePlan(64) as plan:
        want = rope_out(plan, x, positions=pos, layout="gptj")
        need = posenc.rope_factors(plan, positions=pos, layout="gptj").storage.nbytes
        storage = np.full(need // 4 + 5, np.nan, np.float32)
        factors = posenc.rope_factors(plan, positions=pos, layout="gptj", storage=storage)
        assert factors.storage is storage
        assert rope_apply(factors, x, dst=x) is x
        assert_bitwise(x, want)
        with pytest.raises(posenc.PosencError, match=INVALID):  # storage too small
            posenc.rope_factors(plan, positions=pos, layout="gptj",
                                storage=np.zeros(need // 4 - 1, np.float32))


def test_factor_errors():
    # 4-D arrays name their axes (no default): [B, L, H, D] here
    rope_apply = functools.partial(posenc.rope_apply, axes="BLHD")
    x = np.zeros((2, 5, 1, 16), np.float32)
    with posenc.RopePlan(16) as plan:
        factors = posenc.rope_factors(plan, start_pos=0, n_rows=9)
        for kwargs in [dict(), dict(first_row=5, row_batch_stride=0), dict(first_row=9),
                       dict(row_batch_stride=5)]:  # rows 5..9 or 9.. past the 9 rows
            with pytest.raises(posenc.PosencError, match=INVALID):
                rope_apply(factors, x, dst=np.ones_like(x), **kwargs)
        dst = np.ones_like(x)
        with pytest.raises(posenc.PosencError):
            rope_apply(factors.rows(5), x, dst=dst, row_batch_stride=0)
        np.testing.assert_array_equal(dst, 1)  # nothing written
        rope_apply(factors, x, row_batch_stride=4)  # rows 0..8: fits
        rope_apply(factors.rows(4), x, row_batch_stride=0)
        with pytest.raises(posenc.PosencError):  # head_dim 8 < rotary_dim 16
            rope_apply(factors, np.zeros((1, 2, 1, 8), np.float32))
        with pytest.raises(TypeError, match="RopeFactors"):
            rope_apply(plan, x)
        with pytest.raises(TypeError):
            posenc.RopeFactors()
        with pytest.raises(ValueError, match="n_rows"):
            posenc.rope_factors(plan)
        with pytest.raises(ValueError, match="rows"):
            factors.rows(3, 7)
        with pytest.raises(ValueError, match=r"shape \(3, n_rows\)"):
            posenc.mrope_factors(plan, [4, 2, 2], positions=np.zeros((2, 4), np.int32))
        with pytest.raises(posenc.PosencError):  # sections sum 9 != 8
            posenc.mrope_factors(plan, [4, 3, 2], positions=np.zeros((3, 4), np.int32))
        with pytest.raises(TypeError, match="float32"):
            posenc.rope_factors(plan, n_rows=2, storage=np.zeros(100))
    assert "n_rows=9" in repr(factors)


# --- errors ---------------------------------------------------------------------------------

def expect_invalid(function, *args, **kwargs):
    with pytest.raises(posenc.PosencError, match=INVALID) as error:
        function(*args, **kwargs)
    assert error.value.status == 1


def test_rope_out_errors():
    # 4-D arrays name their axes (no default): [B, L, H, D] here
    rope_out = functools.partial(posenc.rope_out, axes="BLHD")
    mrope_out = functools.partial(posenc.mrope_out, axes="BLHD")
    x = np.zeros((2, 4, 2, 8), np.float32)
    with posenc.RopePlan(8) as plan:
        # unsupported type pairs: the C library refuses them, nothing written
        sources = {"f32": x, "f16": x.astype(np.float16), "bf16": bf16_bits(x)}
        for src_kind, dst_kind in UNSUPPORTED:
            dst = np.full(x.shape, 1, {"f32": np.float32, "f16": np.float16,
                                       "bf16": np.uint16}[dst_kind])
            expect_invalid(rope_out, plan, sources[src_kind], dst=dst, dst_dtype=dst_kind)
            np.testing.assert_array_equal(dst, 1)
            expect_invalid(rope_out, plan, sources[src_kind], dst_dtype=dst_kind)
        # overlapping src and dst (other than dst is src)
        buf = np.zeros((2, 5, 2, 8), np.float32)
        expect_invalid(rope_out, plan, buf[:, :4], dst=buf[:, 1:])
        square = np.zeros((2, 4, 4, 8), np.float32)  # the same data, other strides
        expect_invalid(rope_out, plan, square, dst=square.transpose(0, 2, 1, 3))
        aliased = x.view(np.uint16)[..., :8]  # f32 -> bf16 into the source's own bytes
        expect_invalid(rope_out, plan, x, dst=aliased, dst_dtype="bf16")
        # a destination whose head vectors overlap each other
        flat = np.zeros(64, np.float32)
        overlapping = np.lib.stride_tricks.as_strided(flat, (1, 4, 2, 8), (4, 8, 4, 4),
                                                      writeable=True)
        expect_invalid(rope_out, plan, x[:1], dst=overlapping)
        expect_invalid(rope_out, posenc.RopePlan(16), x)  # rotary_dim > head_dim
        # shapes, dtypes, strides
        with pytest.raises(ValueError, match="shape of src"):
            rope_out(plan, x, dst=np.zeros((2, 4, 2, 10), np.float32))
        with pytest.raises(ValueError, match=r"shape \(2, 4\) or \(4,\)"):
            rope_out(plan, x, positions=np.zeros((4, 2), np.int32))
        with pytest.raises(ValueError, match="not both"):
            rope_out(plan, x, positions=np.zeros(4, np.int32), start_pos=1)
        with pytest.raises(ValueError, match="axes"):
            rope_out(plan, x, axes="BLDH")
        with pytest.raises(ValueError, match="axes"):
            rope_out(plan, x, axes="LHD")
        with pytest.raises(ValueError, match="4-D"):
            rope_out(plan, x[0, 0])
        with pytest.raises(TypeError, match="dtype"):
            rope_out(plan, x.astype(np.float64))
        with pytest.raises(TypeError, match="dtype"):
            rope_out(plan, x.astype(">f4"))
        with pytest.raises(TypeError, match="bfloat16"):
            rope_out(plan, x, dst_dtype="uint16")
        with pytest.raises(TypeError, match="does not hold"):
            rope_out(plan, x, src_dtype="f16")
        with pytest.raises(TypeError, match="does not hold"):
            rope_out(plan, x, dst=np.zeros(x.shape, np.float16), dst_dtype="bf16")
        with pytest.raises(TypeError, match="ndarray"):
            rope_out(plan, x.tolist())
        with pytest.raises(TypeError, match="RopePlan"):
            rope_out(posenc.SinusoidPlan(8), x)
        read_only = np.zeros_like(x)
        read_only.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            rope_out(plan, x, dst=read_only)
        with pytest.raises(ValueError, match="contiguous"):
            rope_out(plan, np.zeros((2, 4, 2, 16), np.float32)[..., ::2])
        with pytest.raises(ValueError, match="stride"):
            rope_out(plan, x[:, ::-1])
        raw = np.zeros(400, np.uint8)
        odd = np.lib.stride_tricks.as_strided(raw.view(np.float32)[:1], shape=(1, 3, 1, 8),
                                              strides=(0, 34, 34, 4))
        with pytest.raises(ValueError, match="whole number"):
            rope_out(plan, odd)
        odd16 = np.lib.stride_tricks.as_strided(raw.view(np.uint16)[:1], shape=(1, 3, 1, 8),
                                                strides=(0, 17, 17, 2))
        with pytest.raises(ValueError, match="whole number"):
            rope_out(plan, odd16)
        unaligned = np.frombuffer(bytearray(4 * 64 + 1), np.float32, 64,
                                  offset=1).reshape(2, 4, 1, 8)
        with pytest.raises(ValueError, match="aligned"):
            rope_out(plan, unaligned)
        broadcast_dst = np.lib.stride_tricks.as_strided(np.zeros((4, 2, 8), np.float32),
                                                        (2, 4, 2, 8), (0, 64, 32, 4),
                                                        writeable=True)
        with pytest.raises(ValueError, match="stride"):
            rope_out(plan, x, dst=broadcast_dst)
        with pytest.raises(ValueError, match="layout"):
            rope_out(plan, x, layout="llama")
        # M-RoPE
        with pytest.raises(ValueError, match=r"\(3, 2, 4\) or \(3, 4\)"):
            mrope_out(plan, [2, 1, 1], x, positions=np.zeros((3, 8), np.int32))
        with pytest.raises(ValueError):
            mrope_out(plan, [2, 1, 1], x)  # positions required
        expect_invalid(mrope_out, plan, [2, 1, 2], x, positions=np.zeros((3, 4), int))
    np.testing.assert_array_equal(x, 0)


def test_empty_shapes():
    # 4-D arrays name their axes (no default): [B, L, H, D] here
    rope_out = functools.partial(posenc.rope_out, axes="BLHD")
    rope_apply = functools.partial(posenc.rope_apply, axes="BLHD")
    mrope_out = functools.partial(posenc.mrope_out, axes="BLHD")
    with posenc.RopePlan(8) as plan:
        for shape in [(0, 4, 2, 8), (2, 0, 2, 8), (2, 4, 0, 8)]:
            x = np.zeros(shape, np.float32)
            assert rope_out(plan, x, dst_dtype="bf16").shape == shape
            factors = posenc.rope_factors(plan, positions=np.zeros(shape[:2], np.int32))
            assert rope_apply(factors, x).shape == shape
            mrope_out(plan, [2, 1, 1], x, positions=np.zeros((3,) + shape[:2], int))


# --- ggml plans ------------------------------------------------------------------------------

def read_ggml_golden():
    """The cases of tests/data/ggml_rope_golden.txt (format: ggml_rope_golden.py's
    docstring): name -> dict of its fields (floats from float.hex, counted lists as lists)."""
    if not GOLDEN.is_file():
        pytest.skip(f"no {GOLDEN} (tests run outside the repository)")
    lines = GOLDEN.read_text().splitlines()
    assert lines[0] == "posenc-ggml-rope-golden 1"
    cases, current = {}, None
    for line in lines[1:]:
        key, *words = line.split()
        if key == "source":
            continue
        if key == "case":
            current = {"name": words[0]}
        elif key == "end":
            cases[current["name"]] = current
            current = None
        elif key == "layout":
            current[key] = words[0]
        elif key in ("head_dim", "n_dims", "n_ctx_orig"):
            current[key] = int(words[0])
        elif key in ("freq_factors", "freqs"):
            assert int(words[0]) == len(words) - 1
            current[key] = [float.fromhex(w) for w in words[1:]]
        else:
            current[key] = float.fromhex(words[0])
    return cases


GGML_ARGS = ("freq_base", "freq_scale", "ext_factor", "attn_factor", "beta_fast", "beta_slow",
             "n_ctx_orig")
FREQ_REL = 1e-14  # tests/rope_ggml_test.cc's bounds
ATT_REL = 1e-15


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.abs(a - b) / np.abs(b)


def test_ggml_rope_mode():
    """ggml's mode numbers as rope()/mrope() keywords (posenc_rope_ggml_flags); the ones ggml
    does not rotate, and non-integers, are refused."""
    assert posenc.ggml_rope_mode(0) == {"layout": "gptj"}
    assert posenc.ggml_rope_mode(2) == {"layout": "neox"}
    assert posenc.ggml_rope_mode(8) == {"layout": "neox", "ggml": True}
    assert posenc.ggml_rope_mode(24) == {"layout": "neox", "ggml": True}
    assert posenc.ggml_rope_mode(40) == {"layout": "neox", "interleaved": True, "ggml": True}
    for mode in (1, 3, 10, 42, -1, 2**31 - 1):
        with pytest.raises(posenc.PosencError):
            posenc.ggml_rope_mode(mode)
    with pytest.raises(ValueError):
        posenc.ggml_rope_mode(2**31)
    for mode in (2.0, "2", None, True):
        with pytest.raises(TypeError):
            posenc.ggml_rope_mode(mode)
    # ggml's normal mode rotates adjacent pairs: the same as layout="gptj".
    plan = posenc.RopePlan(8, 10000.0)
    x = np.arange(3 * 2 * 8, dtype=np.float32).reshape(3, 2, 8) / 10
    a, b = x.copy(), x.copy()
    posenc.rope(plan, a, start_pos=5, **posenc.ggml_rope_mode(0))
    posenc.rope(plan, b, start_pos=5, layout="gptj")
    np.testing.assert_array_equal(a, b)


def ggml_plan(c):
    return posenc.plan_from_ggml(c["n_dims"], c["freq_base"], **{k: c[k] for k in GGML_ARGS[1:]},
                                 freq_factors=c.get("freq_factors"))


def numpy_ggml(n_dims, freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow,
               n_ctx_orig, freq_factors=None):
    """ggml's YaRN recipe (ggml_rope_golden.py's docstring), vectorised in float64 NumPy:
    (frequencies at position 1, attention factor)."""
    i = np.arange(n_dims // 2, dtype=np.float64)
    theta_extrap = np.power(float(freq_base), -2.0 * i / n_dims)
    if freq_factors is not None:
        theta_extrap = theta_extrap / np.asarray(freq_factors, np.float32).astype(np.float64)
    theta = freq_scale * theta_extrap
    mscale = attn_factor
    if ext_factor != 0:
        def corr(b):
            return n_dims * math.log(n_ctx_orig / (b * 2 * math.pi)) / (2 * math.log(freq_base))
        lo = max(0.0, math.floor(corr(beta_fast)))
        hi = min(n_dims - 1.0, math.ceil(corr(beta_slow)))
        ramp = 1 - np.clip((i - lo) / max(0.001, hi - lo), 0, 1)
        mix = ramp * ext_factor
        theta = theta * (1 - mix) + theta_extrap * mix
        mscale *= 1 + 0.1 * math.log(1 / freq_scale)
    return theta, mscale


def test_ggml_plans_match_golden():
    cases = read_ggml_golden()
    assert {"llama2-7b", "llama3.1-8b-rope-freqs", "yarn-factor4"} <= set(cases)
    for name, c in cases.items():
        with ggml_plan(c) as plan:
            assert plan.rotary_dim == c["n_dims"], name
            assert rel_err(plan.attention_factor, c["attention_factor"]) <= ATT_REL, name
            worst = rel_err(plan.freqs, c["freqs"]).max()
            assert worst <= FREQ_REL, f"{name}: relative error {worst:.3g}"
            freqs, mscale = numpy_ggml(c["n_dims"], *(c[k] for k in GGML_ARGS),
                                       freq_factors=c.get("freq_factors"))
            assert rel_err(plan.freqs, freqs).max() <= FREQ_REL, name
            assert rel_err(plan.attention_factor, mscale) <= ATT_REL, name


def test_ggml_plans_match_numpy_formula():
    """Random parameters (fixed seed): the plan's frequencies and attention factor against
    the NumPy evaluation. RopePlan.from_ggml is the same constructor."""
    rng = np.random.default_rng(20250101)
    for _ in range(200):
        n_dims = 2 * int(rng.integers(1, 80))
        yarn = rng.random() < 0.7
        args = dict(freq_base=float(rng.choice([10000.0, 500000.0, 1e6, 10.0, 1.5e3])),
                    freq_scale=float(rng.choice([1.0, 0.5, 0.25, 1 / 40, 2.0, 0.1234])),
                    ext_factor=float(rng.choice([1.0, 0.5, 0.3])) if yarn else 0.0,
                    attn_factor=float(rng.choice([1.0, 0.8, 1.25])),
                    beta_fast=float(rng.uniform(0.5, 64)), beta_slow=float(rng.uniform(0.5, 8)),
                    n_ctx_orig=int(rng.choice([0, 64, 2048, 4096, 32768])) if not yarn else
                    int(rng.choice([64, 2048, 4096, 32768])))
        factors = rng.uniform(1, 8, n_dims // 2).astype(np.float32) if rng.random() < 0.3 \
            else None
        freqs, mscale = numpy_ggml(n_dims, **args, freq_factors=factors)
        for plan in [posenc.plan_from_ggml(n_dims, **args, freq_factors=factors),
                     posenc.RopePlan.from_ggml(n_dims, **args, freq_factors=factors)]:
            with plan:
                assert rel_err(plan.freqs, freqs).max() <= FREQ_REL, (n_dims, args)
                assert rel_err(plan.attention_factor, mscale) <= ATT_REL, (n_dims, args)


def test_ggml_plan_defaults_and_errors():
    with posenc.plan_from_ggml(64, 10000.0) as ggml, posenc.RopePlan(64, 10000.0) as plain:
        np.testing.assert_array_equal(ggml.freqs, plain.freqs)
        assert ggml.attention_factor == 1.0
    with posenc.plan_from_ggml(64, 10000.0, freq_scale=0, attn_factor=0) as zeros:
        assert zeros.attention_factor == 1.0  # 0 -> 1 for both
        np.testing.assert_array_equal(zeros.freqs, posenc.RopePlan(64, 10000.0).freqs)
    with pytest.raises(ValueError, match="32 entries"):
        posenc.plan_from_ggml(64, 10000.0, freq_factors=np.ones(31))
    for kwargs in [dict(ext_factor=1.0), dict(ext_factor=1.0, n_ctx_orig=4096, beta_fast=0),
                   dict(freq_factors=-np.ones(32)), dict(freq_scale=-1.0),
                   dict(freq_base=1.0), dict(attn_factor=float("nan"))]:
        args = dict(n_dims=64, freq_base=10000.0)
        args.update(kwargs)
        expect_invalid(posenc.plan_from_ggml, **args)
    expect_invalid(posenc.plan_from_ggml, 63, 10000.0)
    with pytest.raises(TypeError):
        posenc.plan_from_ggml(64.0, 10000.0)


def test_ggml_plan_rotates_as_golden(isa):
    """A ggml plan rotates as a plan made from the golden frequencies and attention factor
    (equal to within 1e-14 relative, so the rotations agree to float32 rounding)."""
    posenc.set_isa(isa)
    c = read_ggml_golden()["yarn-factor4"]
    rng = np.random.default_rng(1)
    x = normal_f32(rng, (2, 16, 2, c["head_dim"]))
    pos = rng.integers(0, 4096, (2, 16))
    with ggml_plan(c) as plan, posenc.RopePlan.from_freqs(
            c["freqs"], attention_factor=c["attention_factor"]) as golden:
        ours = posenc.rope_out(plan, x, positions=pos, layout=c["layout"])
        theirs = posenc.rope_out(golden, x, positions=pos, layout=c["layout"])
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-4)


# --- 4-D arrays: no silent axis order (issue 26, case 5) -------------------------------------

def test_4d_without_axes_is_refused_not_guessed():
    """HF passes q and k as [B, H, L, D]; posenc used to read every 4-D array as [B, L, H, D]
    when axes was left out, rotating heads by position. Now a 4-D array without axes is a
    ValueError naming axes, unless the positions' shape leaves one order: nothing written."""
    rng = np.random.default_rng(26)
    plan = posenc.RopePlan(8)
    hf = normal_f32(rng, (2, 4, 4, 8))  # [B, H, L, D] with H == L: positions cannot tell
    before = hf.copy()
    pos = np.array([[0, 1, 2, 3], [50, 51, 52, 53]])
    with pytest.raises(ValueError, match=r"axes='BLHD'.*axes='BHLD'"):
        posenc.rope_out(plan, hf, positions=pos)
    with pytest.raises(ValueError, match="axes"):
        posenc.rope(plan, hf, positions=pos)
    with pytest.raises(ValueError, match="axes"):
        posenc.rope_out(plan, hf, start_pos=7)  # no positions at all
    with pytest.raises(ValueError, match="axes"):
        posenc.rope(plan, hf)
    with pytest.raises(ValueError, match="axes"):
        posenc.rope_apply(posenc.rope_factors(plan, positions=pos), hf)
    with pytest.raises(ValueError, match="axes"):
        posenc.mrope_out(plan, [2, 1, 1], hf, positions=np.stack([pos] * 3))
    with pytest.raises(ValueError, match="axes"):
        posenc.mrope(plan, [2, 1, 1], hf, positions=np.stack([pos] * 3))
    np.testing.assert_array_equal(hf, before)
    # named, it is HF's layout
    out = posenc.rope_out(plan, hf, positions=pos, axes="BHLD")
    for b in range(2):
        for h in range(4):
            single = hf[b, h][:, None, :].copy()  # [L, 1, D]
            posenc.rope(plan, single, positions=pos[b])
            assert_bitwise(out[b, h], single[:, 0, :])


@pytest.mark.parametrize("axes", ["BLHD", "BHLD"])
def test_4d_axes_inferred_only_from_positions_that_fit_one_order(axes):
    rng = np.random.default_rng(27)
    B, L, H, D = 2, 5, 3, 16
    shape = (B, L, H, D) if axes == "BLHD" else (B, H, L, D)
    x = normal_f32(rng, shape)
    pos = rng.integers(0, 10000, (B, L))
    with posenc.RopePlan(16, 500000.0) as plan:
        named = posenc.rope_out(plan, x, positions=pos, axes=axes)
        assert_bitwise(posenc.rope_out(plan, x, positions=pos), named)
        assert_bitwise(posenc.rope_out(plan, x, positions=pos[0]), posenc.rope_out(
            plan, x, positions=pos[0], axes=axes))
        y = x.copy()
        posenc.rope(plan, y, positions=pos)
        assert_bitwise(y, named)
        pos3 = np.stack([pos, pos + 1, pos + 2])
        assert_bitwise(posenc.mrope_out(plan, [4, 2, 2], x, positions=pos3),
                       posenc.mrope_out(plan, [4, 2, 2], x, positions=pos3, axes=axes))
        # positions of another batch count fit neither: refused, naming axes
        with pytest.raises(ValueError, match="axes"):
            posenc.rope_out(plan, x, positions=np.zeros((B + 1, L), np.int32))


def _ggml_mrope_reference(n_dims, base, mode, sections, pos4, x):
    """ggml_mrope_cache_init and rotate_pairs (modes 8, 24, 40) in float64, written from
    ggml's description: four running thetas, the sector of pair k modulo the sections' sum,
    the vision mode's restarts; pairs (k, k + n) with n = n_dims / 2 (vision: n_dims)."""
    s = sections
    n = n_dims if mode == 24 else n_dims // 2
    scale = base ** (-2.0 / n_dims)
    total, sec_w = sum(s), s[0] + s[1]
    out = x.astype(np.float64).copy()
    for t in range(x.shape[0]):
        th = [float(pos4[r, t]) for r in range(4)]
        for k in range(n):
            c = k % total
            if mode == 24:
                if c == 0:
                    th[0] = float(pos4[0, t])
                elif c == s[0]:
                    th[1] = float(pos4[1, t])
                elif c == sec_w:
                    th[2] = float(pos4[2, t])
                elif c == sec_w + s[2]:
                    th[3] = float(pos4[3, t])
            if mode == 40:
                row = (1 if c % 3 == 1 and c < 3 * s[1] else 2 if c % 3 == 2 and c < 3 * s[2]
                       else 0 if c % 3 == 0 and c < 3 * s[0] else 3)
            else:
                row = 0 if c < s[0] else 1 if c < sec_w else 2 if c < sec_w + s[2] else 3
            a = th[row]
            x0, x1 = x[t, :, k].astype(np.float64), x[t, :, k + n].astype(np.float64)
            out[t, :, k] = x0 * np.cos(a) - x1 * np.sin(a)
            out[t, :, k + n] = x0 * np.sin(a) + x1 * np.cos(a)
            th = [v * scale for v in th]
    return out


@pytest.mark.parametrize("mode,n_dims,head_dim,sections", [
    (8, 128, 128, (16, 24, 24, 0)), (40, 128, 128, (24, 20, 20, 0)),
    (40, 64, 64, (6, 5, 5, 4)), (24, 40, 80, (20, 20, 20, 20)), (24, 32, 64, (8, 0, 6, 3))])
def test_ggml_mrope_modes_rotate_as_ggml(isa, mode, n_dims, head_dim, sections):
    """A plan made with ggml's M-RoPE mode carries its rule: mrope() with four sections and
    four position rows gives ggml's rotation; the one-position forms refuse the plan."""
    posenc.set_isa(isa)
    rng = np.random.default_rng(mode + n_dims)
    n_tok, heads = 7, 2
    plan = posenc.plan_from_ggml(n_dims, 10000.0, mode=mode, sections=sections)
    assert plan.ggml["ggml"] and plan.ggml["interleaved"] == (mode == 40)
    assert plan.rotary_dim == (2 * n_dims if mode == 24 else n_dims)
    pos4 = rng.integers(0, 3000, (4, n_tok)).astype(np.int32)
    pos4[1:3, 0] = pos4[0, 0]
    pos4[3, 0] = 0  # a llama.cpp text token
    x = rng.uniform(-1, 1, (n_tok, heads, head_dim)).astype(np.float32)
    y = x.copy()
    posenc.mrope(plan, list(sections), y, positions=pos4)
    want = _ggml_mrope_reference(n_dims, 10000.0, mode, sections, pos4, x)
    np.testing.assert_allclose(y, want, atol=2e-6, rtol=0)
    z = posenc.mrope_out(plan, list(sections), x[None], positions=pos4, axes="BLHD")
    np.testing.assert_array_equal(z[0], y)
    with pytest.raises(posenc.PosencError, match="four position rows"):
        posenc.rope(plan, x.copy(), start_pos=3)
    with pytest.raises(ValueError, match="four"):
        posenc.mrope(plan, list(sections[:3]), x.copy(), positions=pos4)
    with pytest.raises(posenc.PosencError):
        posenc.mrope(plan, list(sections[:3]), x.copy(), positions=pos4[:3], ggml=False)


def test_plan_from_ggml_mode_arguments():
    """mode and sections: sections only with an M-RoPE mode and always with one; a plain mode
    carries its layout (mode 0: adjacent pairs)."""
    with pytest.raises(ValueError):
        posenc.plan_from_ggml(64, 10000.0, mode=8)
    with pytest.raises(ValueError):
        posenc.plan_from_ggml(64, 10000.0, mode=2, sections=(8, 8, 8, 8))
    with pytest.raises(ValueError):
        posenc.plan_from_ggml(64, 10000.0, mode=8, sections=(8, 8, 8))
    with pytest.raises(posenc.PosencError):
        posenc.plan_from_ggml(64, 10000.0, mode=10)
    with pytest.raises(posenc.PosencError):
        posenc.plan_from_ggml(64, 10000.0, mode=8, sections=(0, 0, 0, 8))
    plan = posenc.plan_from_ggml(8, 10000.0, mode=0)
    assert plan.ggml["layout"] == "gptj" and not plan.ggml["ggml"]
    x = np.arange(3 * 2 * 8, dtype=np.float32).reshape(3, 2, 8) / 10
    a, b = x.copy(), x.copy()
    posenc.rope(plan, a, start_pos=5)
    posenc.rope(posenc.RopePlan(8, 10000.0), b, start_pos=5, layout="gptj")
    np.testing.assert_array_equal(a, b)
