"""QK-norm fused with RoPE (posenc.rope_qknorm, posenc_rope_qknorm) and slot-mapped cache
writes (posenc.rope_out_slots), on every ISA.

Checked against a float64 NumPy evaluation of the definition, y = rope(x * inv * w) with
inv = 1 / sqrt(mean(x^2) + eps) over each head vector (w + 1 for Gemma), within the header's
bounds; q and k in one call against two calls; in place against out of place; and every
refusal (weights that are not floating values or not head_dim long, a missing eps or
k_weight, tensors that require grad)."""

import numpy as np
import posenc
import pytest

import oracle

INVALID = "invalid argument"


def define(x, w, eps, gemma, positions, rotary_dim, layout, base=10000.0):
    """The float64 definition for x [L, H, D]."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64) + (1.0 if gemma else 0.0)
    inv = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    n = x * inv * w
    cos, sin = oracle.exact_cos_sin(positions, oracle.default_freqs(rotary_dim, base))
    y, magnitude = oracle.rope(n, cos, sin, rotary_dim, layout)
    return y, np.maximum(magnitude, np.abs(n))


@pytest.mark.parametrize("layout", ["neox", "gptj"])
@pytest.mark.parametrize("gemma", [False, True])
def test_against_the_definition(isa, layout, gemma):
    posenc.set_isa(isa)
    rng = np.random.default_rng(7)
    L, H, D, R = 6, 4, 80, 64
    plan = posenc.RopePlan(R, 10000.0)
    x = rng.normal(0.0, 3.0, (L, H, D)).astype(np.float32)
    w = rng.uniform(0.25, 2.0, D).astype(np.float32)
    positions = rng.integers(0, 100000, L)
    y = posenc.rope_qknorm(plan, x, w, eps=1e-6, gemma=gemma, positions=positions,
                           layout=layout)
    want, magnitude = define(x, w, 1e-6, gemma, positions, R, layout)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_array_less(np.abs(y - want), magnitude * 2.0**-19 + 1e-30)


def test_q_and_k_in_one_call_in_place_and_16_bit(isa):
    posenc.set_isa(isa)
    rng = np.random.default_rng(8)
    L, D = 5, 128
    plan = posenc.RopePlan(D, 500000.0)
    q = rng.normal(0.0, 1.0, (L, 8, D)).astype(np.float32)
    k = rng.normal(0.0, 1.0, (L, 2, D)).astype(np.float32)
    wq = rng.uniform(0.5, 1.5, D).astype(np.float32)
    wk = rng.uniform(0.5, 1.5, D).astype(np.float32)
    qy, ky = posenc.rope_qknorm(plan, q, wq, k=k, k_weight=wk, eps=1e-5, start_pos=100)
    np.testing.assert_array_equal(qy, posenc.rope_qknorm(plan, q, wq, eps=1e-5, start_pos=100))
    np.testing.assert_array_equal(ky, posenc.rope_qknorm(plan, k, wk, eps=1e-5, start_pos=100))
    qi, ki = q.copy(), k.copy()
    out = posenc.rope_qknorm(plan, qi, wq, k=ki, k_weight=wk, eps=1e-5, start_pos=100,
                             q_dst=qi, k_dst=ki)
    assert out[0] is qi and out[1] is ki
    np.testing.assert_array_equal(qi, qy)
    np.testing.assert_array_equal(ki, ky)
    # f32 -> f16: the f32 result rounded once.
    half = posenc.rope_qknorm(plan, q, wq, eps=1e-5, start_pos=100, dst_dtype="float16")
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, qy.astype(np.float16))


def test_refusals():
    plan = posenc.RopePlan(64, 10000.0)
    x = np.ones((2, 2, 64), np.float32)
    w = np.ones(64, np.float32)
    with pytest.raises(TypeError, match="floating"):
        posenc.rope_qknorm(plan, x, np.ones(64, np.int32), eps=1e-6)
    with pytest.raises(TypeError, match="floating"):
        posenc.rope_qknorm(plan, x, np.ones(64, np.uint16), eps=1e-6)
    with pytest.raises(ValueError, match=r"shape \(64,\)"):
        posenc.rope_qknorm(plan, x, np.ones(63, np.float32), eps=1e-6)
    with pytest.raises(TypeError, match="eps"):
        posenc.rope_qknorm(plan, x, w)
    with pytest.raises(ValueError, match="k_weight is required"):
        posenc.rope_qknorm(plan, x, w, k=x.copy(), eps=1e-6)
    with pytest.raises(ValueError, match="need k"):
        posenc.rope_qknorm(plan, x, w, k_weight=w, eps=1e-6)
    before = x.copy()
    with pytest.raises(posenc.PosencError, match=INVALID):
        posenc.rope_qknorm(plan, x, w, eps=-1.0, q_dst=x)
    np.testing.assert_array_equal(x, before)


def test_torch_tensors_and_no_silent_gradients():
    torch = pytest.importorskip("torch")
    plan = posenc.RopePlan(64, 10000.0)
    x = torch.randn(3, 2, 64)
    w = torch.rand(64) + 0.5
    y = posenc.rope_qknorm(plan, x, w, eps=1e-6)
    assert isinstance(y, torch.Tensor)
    want = posenc.rope_qknorm(plan, x.numpy(), w.numpy(), eps=1e-6)
    np.testing.assert_array_equal(y.numpy(), want)
    with pytest.raises(RuntimeError):
        posenc.rope_qknorm(plan, x.clone().requires_grad_(), w, eps=1e-6)


# --- slot-mapped destinations (posenc.rope_out_slots) ---------------------------------------

@pytest.mark.parametrize("cache_axes", ["CHD", "HCD"])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_rope_out_slots_writes_rope_out_rows_into_cells(isa, cache_axes, index_type):
    posenc.set_isa(isa)
    rng = np.random.default_rng(9)
    L, H, D, cells = 7, 2, 64, 20
    plan = posenc.RopePlan(D, 10000.0)
    src = rng.normal(0.0, 1.0, (L, H, D)).astype(np.float32)
    slots = rng.permutation(cells)[:L].astype(index_type)
    slots[3] = -1
    shape = (cells, H, D) if cache_axes == "CHD" else (H, cells, D)
    cache = np.full(shape, 7.0, np.float16)
    out = posenc.rope_out_slots(plan, src, cache, slots, start_pos=50, cache_axes=cache_axes)
    assert out is cache
    want = posenc.rope_out(plan, src, start_pos=50, dst_dtype="float16")
    by_cell = cache if cache_axes == "CHD" else cache.transpose(1, 0, 2)
    for t, c in enumerate(slots):
        if c >= 0:
            np.testing.assert_array_equal(by_cell[c], want[t])
    untouched = np.setdiff1d(np.arange(cells), slots[slots >= 0])
    assert (by_cell[untouched] == 7.0).all()


def test_rope_out_slots_refusals():
    plan = posenc.RopePlan(64, 10000.0)
    src = np.ones((3, 2, 64), np.float32)
    cache = np.zeros((10, 2, 64), np.float32)
    before = cache.copy()
    with pytest.raises(posenc.PosencError, match=INVALID):
        posenc.rope_out_slots(plan, src, cache, np.array([1, 4, 1], np.int32))
    with pytest.raises(posenc.PosencError, match=INVALID):
        posenc.rope_out_slots(plan, src, cache, np.array([1, 4, 10], np.int64))
    np.testing.assert_array_equal(cache, before)
    with pytest.raises(TypeError, match="int32 or int64"):
        posenc.rope_out_slots(plan, src, cache, np.array([1, 2, 3], np.uint32))
    with pytest.raises(TypeError, match="int32 or int64"):
        posenc.rope_out_slots(plan, src, cache, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="entries for 3 tokens"):
        posenc.rope_out_slots(plan, src, cache, np.array([1, 2], np.int32))


# --- q8_0 blocks (posenc.rope_out_q8_0) -----------------------------------------------------

def ggml_q8_0(x):
    """ggml's quantize_row_q8_0_ref in float32 NumPy (tests/data/q8_0_golden.py's rule): the
    bytes of the blocks of x (a multiple of 32 floats)."""
    f = np.float32
    out = bytearray()
    for block in np.asarray(x, f).reshape(-1, 32):
        amax = f(0)
        for v in block:
            a = f(abs(v))
            amax = amax if amax > a else a
        d = f(amax / f(127))
        inv = f(f(1) / d) if d != 0 else f(0)
        out += np.array([d], f).astype(np.float16).tobytes()
        for v in block:
            x0 = float(f(v * inv))
            out += int(np.floor(abs(x0) + 0.5) * (1 if x0 >= 0 else -1)).to_bytes(1, "little",
                                                                                 signed=True)
    return bytes(out)


def test_rope_out_q8_0_is_ggmls_quantizer_on_rope_out(isa):
    posenc.set_isa(isa)
    rng = np.random.default_rng(10)
    L, H, D = 3, 2, 64
    plan = posenc.RopePlan(D, 10000.0)
    src = rng.normal(0.0, 2.0, (L, H, D)).astype(np.float32)
    blocks = posenc.rope_out_q8_0(plan, src, start_pos=9)
    assert blocks.dtype == np.uint8 and blocks.shape == (L, H, D // 32 * 34)
    rotated = posenc.rope_out(plan, src, start_pos=9)
    for t in range(L):
        for h in range(H):
            assert blocks[t, h].tobytes() == ggml_q8_0(rotated[t, h])
    cache = np.zeros((5, H, D // 32 * 34), np.uint8)
    posenc.rope_out_q8_0(plan, src, cache, slots=np.array([4, -1, 0], np.int64), start_pos=9)
    assert cache[4].tobytes() == blocks[0].tobytes() and cache[0].tobytes() == blocks[2].tobytes()
    assert not cache[1:4].any()
    with pytest.raises(TypeError, match="float32"):
        posenc.rope_out_q8_0(plan, src.astype(np.float16))
    with pytest.raises(posenc.PosencError, match=INVALID):
        posenc.rope_out_q8_0(plan, src[:, :, :48].copy(), np.zeros((3, 2, 34), np.uint8))
