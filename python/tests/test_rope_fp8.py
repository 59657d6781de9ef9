"""RoPE into an FP8 E4M3 cache (posenc.rope_out_fp8, posenc_rope_out_fp8), on every ISA.

Checked against a NumPy transcription of the format (float8_e4m3fn: nearest even from the
float32 quotient v / scale, saturated to +-448, NaN kept, -0 as 0x80; the rule of
tests/data/fp8_golden.py) applied to rope_out's float32 result; against ml_dtypes'
float8_e4m3fn and torch's float8_e4m3fn of the clamped quotient where those are installed;
rows, slots, strided caches, torch float8 tensors as dst, and the refusals."""

import numpy as np
import posenc
import pytest

INVALID = "invalid argument"


def e4m3(y):
    """The E4M3 bytes of float32 values y (any shape), exactly: the quantum of each value's
    binade (2^-9 below 2^-6), nearest even by np.rint on the exact quotient, saturated."""
    with np.errstate(all="ignore"):
        return _e4m3(np.asarray(y, np.float32))


def _e4m3(y):
    a = np.abs(y.astype(np.float64))
    finite = np.isfinite(a)
    e = np.maximum(np.frexp(np.where(finite & (a > 0), a, 1.0))[1] - 1, -6)
    q = np.ldexp(1.0, e - 3)
    r = np.where(finite, np.minimum(np.rint(a / q) * q, 448.0), 448.0)
    er = np.frexp(np.where(r > 0, r, 1.0))[1] - 1
    normal = ((er + 7) << 3) + (np.ldexp(r, -er) * 8).astype(np.int64) - 8
    code = np.where(r < 2.0**-6, (r * 512).astype(np.int64), normal)
    code = code | np.where(np.signbit(y), 0x80, 0)
    return np.where(np.isnan(y), 0x7F, code).astype(np.uint8)  # NaN: 0x7F, unsigned


def quotient(rotated, scale):
    with np.errstate(all="ignore"):
        return (rotated / np.float32(scale)).astype(np.float32)


@pytest.mark.parametrize("layout", ["neox", "gptj"])
def test_rope_out_fp8_is_e4m3_of_rope_out(isa, layout):
    posenc.set_isa(isa)
    rng = np.random.default_rng(11)
    L, H, D, R = 5, 3, 80, 64
    plan = posenc.RopePlan(R, 10000.0)
    src = (rng.normal(0.0, 1.0, (L, H, D)) * 2.0 ** rng.integers(-12, 10, (L, H, D))).astype(
        np.float32)
    src[0, 0, 5] = np.nan
    src[1, 2, 70] = -np.inf
    for scale in (1.0, 0.0125, 3.5):
        got = posenc.rope_out_fp8(plan, src, scale=scale, start_pos=7, layout=layout)
        assert got.dtype == np.uint8 and got.shape == (L, H, D)
        rotated = posenc.rope_out(plan, src, start_pos=7, layout=layout)
        np.testing.assert_array_equal(got, e4m3(quotient(rotated, scale)))


def test_rope_out_fp8_slots_and_strided_cache(isa):
    posenc.set_isa(isa)
    rng = np.random.default_rng(12)
    L, H, D = 4, 2, 128
    plan = posenc.RopePlan(D, 500000.0)
    src = rng.normal(0.0, 3.0, (L, H, D)).astype(np.float32)
    rows = posenc.rope_out_fp8(plan, src, scale=0.5, positions=np.array([3, 9, 1, 4], np.int32))
    # A cache [cells, H, D + 16] viewed as [cells, H, D]: strided rows, spare bytes untouched.
    store = np.full((7, H, D + 16), 0xEE, np.uint8)
    cache = store[:, :, :D]
    out = posenc.rope_out_fp8(plan, src, cache, scale=0.5, slots=np.array([6, -1, 0, 2], np.int32),
                              positions=np.array([3, 9, 1, 4], np.int32))
    assert out is cache
    np.testing.assert_array_equal(cache[6], rows[0])
    np.testing.assert_array_equal(cache[0], rows[2])
    np.testing.assert_array_equal(cache[2], rows[3])
    assert (store[[1, 3, 4, 5]] == 0xEE).all() and (store[:, :, D:] == 0xEE).all()


def test_e4m3_transcription_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(13)
    y = rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32)
    y = np.concatenate([y, np.float32([0.0, -0.0, np.inf, -np.inf, 448, 464, -464, 2.0**-10,
                                       1.5 * 2.0**-9, 1.0625, 1.1875])])
    with np.errstate(all="ignore"):
        clipped = np.clip(y, np.float32(-448), np.float32(448))
        ref = clipped.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    mine = e4m3(y)
    nan = np.isnan(y)
    np.testing.assert_array_equal(mine[~nan], ref[~nan])
    assert ((mine[nan] & 0x7F) == 0x7F).all() and ((ref[nan] & 0x7F) == 0x7F).all()


def test_rope_out_fp8_every_float_near_the_grid(isa):
    posenc.set_isa(isa)
    # Elements [R, D) are copied: every float of [2^-12, 2^10) on a stride, both signs.
    u = np.arange(0x39800000, 0x44800000, 97, dtype=np.uint32)
    x = np.concatenate([u, u | np.uint32(0x80000000)]).view(np.float32)
    D = 1024
    n = -(-x.size // (D - 2))
    src = np.zeros((n, 1, D), np.float32)
    flat = np.zeros(n * (D - 2), np.float32)
    flat[:x.size] = x
    src[:, 0, 2:] = flat.reshape(n, D - 2)
    plan = posenc.RopePlan(2, 10000.0)
    got = posenc.rope_out_fp8(plan, src, scale=1.0)
    np.testing.assert_array_equal(got[:, 0, 2:], e4m3(src[:, 0, 2:]))


def test_rope_out_fp8_matches_torch_float8(isa):
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip(f"torch {torch.__version__} has no float8_e4m3fn")
    posenc.set_isa(isa)
    rng = np.random.default_rng(14)
    L, H, D = 3, 2, 64
    plan = posenc.RopePlan(D, 10000.0)
    src = (rng.normal(0.0, 1.0, (L, H, D)) * 2.0 ** rng.integers(-12, 10, (L, H, D))).astype(
        np.float32)
    scale = 0.75
    rotated = posenc.rope_out(plan, src)
    q = torch.from_numpy(quotient(rotated, scale)).clamp(-448.0, 448.0)
    want = q.to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    np.testing.assert_array_equal(posenc.rope_out_fp8(plan, src, scale=scale), want)
    # A float8_e4m3fn tensor as dst is written in place and returned.
    dst = torch.zeros((L, H, D), dtype=torch.float8_e4m3fn)
    out = posenc.rope_out_fp8(plan, torch.from_numpy(src), dst, scale=scale)
    assert out is dst
    np.testing.assert_array_equal(dst.view(torch.uint8).numpy(), want)


def test_rope_out_fp8_refusals():
    plan = posenc.RopePlan(32, 10000.0)
    src = np.ones((2, 2, 32), np.float32)
    with pytest.raises(TypeError, match="float32"):
        posenc.rope_out_fp8(plan, src.astype(np.float16), scale=1.0)
    with pytest.raises(TypeError):
        posenc.rope_out_fp8(plan, src)  # scale is required
    with pytest.raises(TypeError, match="scale"):
        posenc.rope_out_fp8(plan, src, scale="1")
    for scale in (0.0, -1.0, float("nan"), float("inf"), 1e39):
        with pytest.raises(posenc.PosencError, match=INVALID):
            posenc.rope_out_fp8(plan, src, scale=scale)
    with pytest.raises(ValueError, match="uint8"):
        posenc.rope_out_fp8(plan, src, np.zeros((2, 2, 32), np.float32), scale=1.0)
    with pytest.raises(ValueError, match="rows"):
        posenc.rope_out_fp8(plan, src, np.zeros((3, 2, 32), np.uint8), scale=1.0)
    with pytest.raises(ValueError, match="slots need a dst"):
        posenc.rope_out_fp8(plan, src, scale=1.0, slots=np.array([0, 1], np.int32))
    cache = np.full((4, 2, 32), 7, np.uint8)
    with pytest.raises(posenc.PosencError, match=INVALID):
        posenc.rope_out_fp8(plan, src, cache, scale=1.0, slots=np.array([1, 1], np.int32))
    assert (cache == 7).all()
