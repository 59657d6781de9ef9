"""int64 positions (POSENC_ROPE_POSITIONS_INT64) through the binding, on every ISA: int64
NumPy arrays (and int64 torch tensors) reach the library as they are, without an int32 copy,
and every RoPE function gives bitwise the result of the same int32 positions; a value outside
the int32 range is refused by the library (PosencError naming the argument and its index),
nothing written. And rope_apply_slots (posenc_rope_apply_slots): bitwise rope_out_slots with
the plan and positions the factors came from."""

import numpy as np
import posenc
import pytest
from posenc import _core, _lib

INT32_MAX, INT32_MIN = np.iinfo(np.int32).max, np.iinfo(np.int32).min


def same(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def positions(rng, shape):
    p = rng.integers(INT32_MIN, INT32_MAX, shape, dtype=np.int64, endpoint=True)
    flat = p.reshape(-1)
    flat[0], flat[-1] = INT32_MAX, INT32_MIN
    return p


def calls(plan, rng):
    """(name, call(positions) -> result) for every RoPE function with positions; each call
    makes its inputs afresh from a fixed seed."""
    L, H, D = 7, 2, 64

    def data(shape, seed, dtype=np.float32):
        return np.random.default_rng(seed).standard_normal(shape).astype(dtype)

    def rope(p):
        q, k = data((L, H, D), 1), data((L, 1, D), 2)
        posenc.rope(plan, q, k, positions=p)
        return np.concatenate([q.reshape(-1), k.reshape(-1)])

    def rope_f16(p):
        q = data((L, H, D), 3, np.float16)
        posenc.rope(plan, q, positions=p, layout="gptj", inverse=True)
        return q

    def mrope(p3):
        q = data((L, H, D), 4)
        posenc.mrope(plan, [16, 8, 8], q, positions=p3, interleaved=True)
        return q

    def rerotate(p):
        k = data((L, H, D), 5)
        posenc.rope_rerotate(plan, plan, k, from_positions=p, to_positions=p[::-1].copy())
        return k

    def rope_out(p):
        return posenc.rope_out(plan, data((2, L, H, D), 6), positions=np.stack([p, p[::-1]]),
                               axes="BLHD", dst_dtype="bfloat16")

    def mrope_out(p3):
        return posenc.mrope_out(plan, [16, 8, 8], data((2, L, H, D), 7),
                                positions=np.stack([p3, p3], axis=1), axes="BLHD")

    def slots(p):
        cache = np.zeros((L + 2, H, D), np.float32)
        return posenc.rope_out_slots(plan, data((L, H, D), 8), cache,
                                     np.arange(L, dtype=np.int32)[::-1] + 1, positions=p)

    def q8_0(p):
        return posenc.rope_out_q8_0(plan, data((L, H, D), 9), positions=p)

    def fp8(p):
        return posenc.rope_out_fp8(plan, data((L, H, D), 10), scale=0.5, positions=p)

    def qknorm(p):
        w = np.linspace(0.5, 1.5, D, dtype=np.float32)
        return np.concatenate([y.reshape(-1) for y in posenc.rope_qknorm(
            plan, data((L, H, D), 11), w, eps=1e-6, k=data((L, 1, D), 12), k_weight=w,
            positions=p)])

    def factors(p):
        return posenc.rope_factors(plan, positions=p, layout="gptj").storage

    def mfactors(p3):
        return posenc.mrope_factors(plan, [16, 8, 8], positions=p3).storage

    return [("rope", rope, (L,)), ("rope f16", rope_f16, (L,)), ("mrope", mrope, (3, L)),
            ("rope_rerotate", rerotate, (L,)), ("rope_out", rope_out, (L,)),
            ("mrope_out", mrope_out, (3, L)), ("rope_out_slots", slots, (L,)),
            ("rope_out_q8_0", q8_0, (L,)), ("rope_out_fp8", fp8, (L,)),
            ("rope_qknorm", qknorm, (L,)), ("rope_factors", factors, (L,)),
            ("mrope_factors", mfactors, (3, L))]


def test_int64_positions_are_passed_without_a_copy():
    p = np.arange(10, dtype=np.int64)
    got, _ = _core._positions(p, 10, 0, wide=True)
    assert got.dtype == np.int64 and np.shares_memory(got, p)
    assert _core._positions_flag(got) == _lib.ROPE_POSITIONS_INT64
    # int32 stays int32; other integer types are converted to int32 as before
    assert _core._positions_flag(_core._positions(p.astype(np.int32), 10, 0, wide=True)[0]) == 0
    assert _core._positions(p.astype(np.int16), 10, 0, wide=True)[0].dtype == np.int32
    # the forms without the flag (sinusoids, learned tables) still get int32
    assert _core._positions(p, 10, 0)[0].dtype == np.int32


def test_int64_is_bitwise_int32(isa):
    posenc.set_isa(isa)
    rng = np.random.default_rng(64)
    with posenc.RopePlan(64, 10000.0) as plan:
        for name, call, shape in calls(plan, rng):
            p64 = positions(rng, shape)
            if name in ("mrope", "mrope_out", "mrope_factors"):
                p64 = np.abs(p64 // 2)  # any values; keep them apart from the plain ones
            same(call(p64), call(p64.astype(np.int32)))


def test_out_of_range_int64_is_refused_and_writes_nothing(isa):
    posenc.set_isa(isa)
    rng = np.random.default_rng(65)
    L, H, D = 5, 2, 64
    with posenc.RopePlan(64, 10000.0) as plan:
        for at in (0, 2, L - 1):
            for bad in (INT32_MAX + 1, INT32_MIN - 1):
                p = positions(rng, (L,))
                p[at] = bad
                q = rng.standard_normal((L, H, D)).astype(np.float32)
                before = q.copy()
                with pytest.raises(posenc.PosencError, match=r"int32 range") as error:
                    posenc.rope(plan, q, positions=p)
                assert f"positions[{at}]: {bad}" in str(error.value)
                same(q, before)
                cache = np.zeros((L, H, D), np.float32)
                with pytest.raises(posenc.PosencError, match=rf"positions\[{at}\]"):
                    posenc.rope_out_slots(plan, q, cache, np.arange(L), positions=p)
                assert not cache.any()
                with pytest.raises(posenc.PosencError, match=rf"from_positions\[{at}\]"):
                    posenc.rope_rerotate(plan, plan, q, from_positions=p,
                                         to_positions=np.arange(L, dtype=np.int32))
                same(q, before)
                p3 = np.zeros((3, L), np.int64)
                p3[2, at] = bad
                with pytest.raises(posenc.PosencError, match=rf"positions\[{2 * L + at}\]"):
                    posenc.mrope(plan, [16, 8, 8], q, positions=p3)
                same(q, before)
                with pytest.raises(posenc.PosencError, match=r"int32 range"):
                    posenc.rope_factors(plan, positions=p)


def test_int64_torch_tensors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(66)
    p = positions(rng, (2, 9))
    with posenc.RopePlan(64, 10000.0) as plan:
        x = torch.randn(2, 9, 3, 64)
        want = posenc.rope_out(plan, x, positions=torch.from_numpy(p.astype(np.int32)),
                               axes="BLHD")
        got = posenc.rope_out(plan, x, positions=torch.from_numpy(p), axes="BLHD")
        assert torch.equal(got, want)
        p[1, 3] = INT32_MAX + 5
        with pytest.raises(posenc.PosencError, match=r"positions\[12\]"):
            posenc.rope_out(plan, x, positions=torch.from_numpy(p), axes="BLHD")


@pytest.mark.parametrize("cache_axes", ["CHD", "HCD"])
@pytest.mark.parametrize("layout", ["neox", "gptj"])
def test_rope_apply_slots_is_rope_out_slots(isa, cache_axes, layout):
    posenc.set_isa(isa)
    rng = np.random.default_rng(67)
    L, H, D, cells = 11, 3, 80, 30
    src = rng.standard_normal((L, H, D)).astype(np.float32)
    pos = rng.integers(-1000, 100000, L + 4)
    for index_type in (np.int32, np.int64):
        slots = rng.permutation(cells)[:L].astype(index_type)
        slots[[2, 7]] = -1  # skipped
        shape = (cells, H, D) if cache_axes == "CHD" else (H, cells, D)
        with posenc.RopePlan(64, 10000.0) as plan:
            factors = posenc.rope_factors(plan, positions=pos, layout=layout)
            for inverse in (False, True):
                for dtype in (np.float32, np.float16):
                    start = np.full(shape, 7, dtype)
                    want = posenc.rope_out_slots(plan, src, start.copy(), slots,
                                                 positions=pos[4:], cache_axes=cache_axes,
                                                 layout=layout, inverse=inverse)
                    got = posenc.rope_apply_slots(factors, src, start.copy(), slots,
                                                  first_row=4, cache_axes=cache_axes,
                                                  inverse=inverse)
                    same(got, want)
                    cell_axis = 0 if cache_axes == "CHD" else 1
                    unnamed = np.setdiff1d(np.arange(cells), slots[slots >= 0])
                    assert (np.take(got, unnamed, axis=cell_axis) == 7).all()


def test_rope_apply_slots_refusals_write_nothing():
    rng = np.random.default_rng(68)
    L, H, D = 6, 2, 64
    src = rng.standard_normal((L, H, D)).astype(np.float32)
    with posenc.RopePlan(64, 10000.0) as plan:
        factors = posenc.rope_factors(plan, positions=np.arange(L))
        cache = np.zeros((10, H, D), np.float32)
        bad = {
            "a cell twice": dict(slots=np.array([1, 2, 3, 1, 4, 5])),
            "cell out of range": dict(slots=np.array([1, 2, 3, 10, 4, 5])),
            "rows past the factors": dict(slots=np.arange(L), first_row=1),
        }
        for what, args in bad.items():
            slots = args.pop("slots")
            with pytest.raises(posenc.PosencError, match="posenc_rope_apply_slots"):
                posenc.rope_apply_slots(factors, src, cache, slots, **args)
            assert not cache.any(), what
        with pytest.raises(TypeError, match="slots"):
            posenc.rope_apply_slots(factors, src, cache, np.arange(L, dtype=np.int16))
        with pytest.raises(TypeError, match="RopeFactors"):
            posenc.rope_apply_slots(plan, src, cache, np.arange(L))
        assert not cache.any()
