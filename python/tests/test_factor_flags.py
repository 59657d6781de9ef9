"""The factor path's one flag rule (posenc.h, posenc_rope_factors_bytes), through the binding:
posenc_rope_factors_bytes takes every flag the plan path takes (only the layout changes the
size) and refuses unknown bits with 0; rope_factors / mrope_factors size their storage with
the computation's own flags; and every combination of the plan path's options (layout,
inverse, f32_angles, deterministic; M-RoPE's interleaved) through the factors is bitwise
rope_out / mrope_out with the same options, on every ISA.
"""

import itertools

import numpy as np
import posenc
import pytest
from posenc import _lib

KNOWN = (_lib.ROPE_GPTJ | _lib.ROPE_INVERSE | _lib.ROPE_F32_ANGLES |
         _lib.ROPE_MROPE_INTERLEAVED | _lib.ROPE_DETERMINISTIC | _lib.ROPE_MROPE_GGML |
         _lib.ROPE_POSITIONS_INT64)  # a no-op for the size (no positions)


def assert_bitwise(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


def test_factor_bytes_takes_every_flag_of_the_plan_path():
    bytes_of = _lib.lib.posenc_rope_factors_bytes
    for rotary_dim, n_rows in [(2, 1), (96, 70), (1040, 3)]:
        neox, gptj = bytes_of(rotary_dim, n_rows, 0), bytes_of(rotary_dim, n_rows, _lib.ROPE_GPTJ)
        assert neox == n_rows * rotary_dim * 4 and gptj == 2 * neox
        for flags in range(KNOWN + 1):
            if flags & ~KNOWN:
                continue
            want = gptj if flags & _lib.ROPE_GPTJ else neox
            assert bytes_of(rotary_dim, n_rows, flags) == want, hex(flags)
        for bit in range(32):
            if (1 << bit) & KNOWN:
                continue
            assert bytes_of(rotary_dim, n_rows, 1 << bit) == 0, bit  # refused
            assert bytes_of(rotary_dim, n_rows, (1 << bit) | KNOWN) == 0, bit


def test_factors_with_every_option_are_the_plan_path(isa):
    posenc.set_isa(isa)
    rng = np.random.default_rng(27)
    shape = (2, 9, 3, 72)  # rotary_dim 64 < head_dim: the rest copied
    src = rng.standard_normal(shape).astype(np.float32)
    pos = rng.integers(-10 ** 6, 10 ** 6, shape[:2])
    pos3 = rng.integers(0, 5000, (3,) + shape[:2])
    pos3[1:, :, :3] = pos3[0, :, :3]  # text tokens: three equal positions
    sections = [16, 8, 8]  # valid contiguous and interleaved
    with posenc.RopePlan(64, 10000.0, attention_factor=1.25) as plan:
        for layout, f32_angles, deterministic in itertools.product(
                ["neox", "gptj"], [False, True], [False, True]):
            made = dict(layout=layout, f32_angles=f32_angles, deterministic=deterministic)
            factors = posenc.rope_factors(plan, positions=pos, **made)
            flags = _lib.ROPE_GPTJ if layout == "gptj" else 0
            flags |= (_lib.ROPE_F32_ANGLES if f32_angles else 0) | \
                (_lib.ROPE_DETERMINISTIC if deterministic else 0)
            # the storage is the size the C library gives for these very flags
            assert factors.storage.nbytes == \
                _lib.lib.posenc_rope_factors_bytes(64, factors.n_rows, flags)
            assert (factors.layout, factors.f32_angles, factors.deterministic) == \
                (layout, f32_angles, deterministic)
            for inverse in [False, True]:
                want = posenc.rope_out(plan, src, positions=pos, axes="BLHD", inverse=inverse,
                                       **made)
                got = posenc.rope_apply(factors, src, axes="BLHD", inverse=inverse)
                assert_bitwise(got, want)
            for interleaved in [False, True]:
                mfactors = posenc.mrope_factors(plan, sections, positions=pos3,
                                                interleaved=interleaved, **made)
                assert mfactors.storage.nbytes == factors.storage.nbytes
                for inverse in [False, True]:
                    want = posenc.mrope_out(plan, sections, src, positions=pos3, axes="BLHD",
                                            interleaved=interleaved, inverse=inverse, **made)
                    got = posenc.rope_apply(mfactors, src, axes="BLHD", inverse=inverse)
                    assert_bitwise(got, want)


def test_caller_storage_sized_with_the_computation_flags():
    """Storage sized by posenc_rope_factors_bytes for the flags of the computation (here
    F32_ANGLES | DETERMINISTIC | GPTJ, which the size once refused) is taken as it is."""
    flags = _lib.ROPE_GPTJ | _lib.ROPE_F32_ANGLES | _lib.ROPE_DETERMINISTIC
    nbytes = _lib.lib.posenc_rope_factors_bytes(32, 5, flags)
    assert nbytes == 5 * 2 * 32 * 4
    storage = np.empty(nbytes // 4, np.float32)
    with posenc.RopePlan(32, 10000.0) as plan:
        factors = posenc.rope_factors(plan, start_pos=3, n_rows=5, layout="gptj",
                                      f32_angles=True, deterministic=True, storage=storage)
        assert factors.storage is storage
        x = np.ones((1, 5, 2, 32), np.float32)
        assert_bitwise(posenc.rope_apply(factors, x, axes="BLHD"),
                       posenc.rope_out(plan, x, start_pos=3, axes="BLHD", layout="gptj",
                                       f32_angles=True, deterministic=True))
