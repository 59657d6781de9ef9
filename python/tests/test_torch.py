"""Every kernel through torch CPU tensors (float32, bfloat16, float16) against the same call on
NumPy arrays, bitwise; 4-D batches against per-batch calls; the bindings of the C entry points
added with the tensor support (16-bit in-place forms, alibi_softmax, the float32 plan recipes,
the kernel queries)."""

import subprocess
import sys

import numpy as np
import posenc
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

DTYPES = ["float32", "bfloat16", "float16"]
TORCH = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def numpy_of(tensor):
    """The tensor's values as the NumPy storage posenc reads (bfloat16 as uint16 bits), copied."""
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16).copy()
    return tensor.numpy().copy()


def bits(x):
    """Comparable bits of a tensor or array (NaN-safe bitwise equality)."""
    if isinstance(x, torch.Tensor):
        x = numpy_of(x)
    return np.ascontiguousarray(x).view(np.uint8)


def random_tensor(shape, dtype, seed=0, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=generator) * scale).to(TORCH[dtype])


def test_no_torch_import_without_tensors():
    code = ("import sys, numpy as np, posenc; q = np.ones((2, 1, 8), np.float32); "
            "posenc.rope(posenc.RopePlan(8), q); posenc.softmax(np.zeros((1, 2, 3), np.float32)); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_in_place_tensor_matches_numpy(dtype):
    plan = posenc.RopePlan(16, 10000.0)
    q = random_tensor((5, 3, 20), dtype, 1)
    k = random_tensor((5, 2, 20), dtype, 2)
    q_np, k_np = numpy_of(q), numpy_of(k)
    positions = torch.tensor([0, 7, 3, 40000, 9])
    assert posenc.rope(plan, q, k, positions=positions) is None
    posenc.rope(plan, q_np, k_np, positions=positions.numpy(), dtype=dtype)
    assert np.array_equal(bits(q), bits(q_np)) and np.array_equal(bits(k), bits(k_np))
    assert not np.array_equal(bits(q), bits(random_tensor((5, 3, 20), dtype, 1)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axes", ["BHLD", "BLHD"])
def test_rope_batch_in_place_and_out_match_per_batch_calls(dtype, axes):
    """q/k as HF passes them ([B, H, L, D] views of [B, L, H, D] storage) or [B, L, H, D], with
    [B, L] position_ids, in one call, against a 3-D call per batch element."""
    plan = posenc.RopePlan(32, 500000.0)
    B, L, H, D = 3, 6, 4, 32
    storage = random_tensor((B, L, H, D), dtype, 3)
    x = storage.transpose(1, 2) if axes == "BHLD" else storage
    positions = torch.stack([torch.arange(L) + 100 * b for b in range(B)])
    out = posenc.rope_out(plan, x, positions=positions, axes=axes)
    assert isinstance(out, torch.Tensor) and out.dtype == TORCH[dtype] and out.shape == x.shape
    expected = numpy_of(storage)  # [B, L, H, D]
    for b in range(B):
        posenc.rope(plan, expected[b], positions=positions[b].numpy(), dtype=dtype)
    got = out.transpose(1, 2) if axes == "BHLD" else out
    assert np.array_equal(bits(got.contiguous()), bits(expected))
    in_place = x.clone() if axes == "BLHD" else storage.clone().transpose(1, 2)
    posenc.rope(plan, in_place, positions=positions, axes=axes)
    assert np.array_equal(bits(in_place.contiguous()), bits(out.contiguous()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_out_given_dst_is_returned(dtype):
    plan = posenc.RopePlan(8)
    src = random_tensor((2, 3, 2, 8), dtype, 4)
    dst = torch.empty_like(src)
    assert posenc.rope_out(plan, src, dst=dst, axes="BLHD") is dst
    assert np.array_equal(bits(dst), bits(posenc.rope_out(plan, numpy_of(src), axes="BLHD",
                                                          src_dtype=dtype)))


def test_rope_out_float32_into_16_bit():
    plan = posenc.RopePlan(8)
    src = random_tensor((1, 4, 2, 8), "float32", 5)
    for dtype in ("bfloat16", "float16"):
        out = posenc.rope_out(plan, src, dst_dtype=dtype, axes="BLHD")
        assert out.dtype == TORCH[dtype]
        ref = posenc.rope_out(plan, numpy_of(src), dst_dtype=dtype, axes="BLHD")
        assert np.array_equal(bits(out), bits(ref))


@pytest.mark.parametrize("dtype", DTYPES)
def test_factors_apply_with_tensors(dtype):
    plan = posenc.RopePlan(16)
    positions = torch.tensor([[5, 6, 7], [1000, 1001, 1002]])
    factors = posenc.rope_factors(plan, positions=positions)
    q = random_tensor((2, 4, 3, 16), dtype, 6)  # [B, H, L, D]
    out = posenc.rope_apply(factors, q, axes="BHLD")
    assert np.array_equal(bits(out), bits(posenc.rope_out(plan, q, positions=positions,
                                                          axes="BHLD")))


@pytest.mark.parametrize("dtype", DTYPES)
def test_mrope_tensors_and_batches(dtype):
    plan = posenc.RopePlan(16, 1000000.0)
    sections = (2, 3, 3)
    B, L, H, D = 2, 5, 2, 16
    positions = torch.randint(0, 3000, (3, B, L))
    x = random_tensor((B, H, L, D), dtype, 7)
    out = posenc.mrope_out(plan, sections, x, positions=positions, axes="BHLD")
    expected = numpy_of(x).transpose(0, 2, 1, 3).copy()  # [B, L, H, D]
    for b in range(B):
        posenc.mrope(plan, sections, expected[b], positions=positions[:, b].numpy(), dtype=dtype)
    assert np.array_equal(bits(out.transpose(1, 2).contiguous()), bits(expected))
    in_place = x.clone()
    posenc.mrope(plan, sections, in_place, positions=positions, axes="BHLD")
    assert np.array_equal(bits(in_place), bits(out))
    factors = posenc.mrope_factors(plan, sections, positions=positions)
    assert np.array_equal(bits(posenc.rope_apply(factors, x, axes="BHLD")), bits(out))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rerotate_16_bit_and_tensors(dtype):
    old, new = posenc.RopePlan(16, 10000.0), posenc.RopePlan(16, 40000.0)
    k = random_tensor((4, 2, 16), dtype, 8)
    k_np = numpy_of(k)
    posenc.rope_rerotate(old, new, k, from_start=10, to_start=3)
    posenc.rope_rerotate(old, new, k_np, from_start=10, to_start=3, dtype=dtype)
    assert np.array_equal(bits(k), bits(k_np))


def round_to(array, dtype):
    """float32 values rounded to the storage type, as the tensor posenc would write."""
    return torch.from_numpy(np.ascontiguousarray(array, np.float32)).to(TORCH[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_sinusoid_tensors_and_16_bit(dtype):
    plan = posenc.SinusoidPlan(12)
    positions = torch.tensor([0, 5, 70000])
    table = posenc.sinusoid_fill(plan, positions, dtype=dtype)
    assert isinstance(table, torch.Tensor) and table.dtype == TORCH[dtype]
    f32 = posenc.sinusoid_fill(plan, positions.numpy())
    assert np.array_equal(bits(table), bits(round_to(f32, dtype)))
    out = torch.zeros((3, 12), dtype=TORCH[dtype])
    assert posenc.sinusoid_fill(plan, 3, start_pos=2, out=out) is out
    assert np.array_equal(bits(out), bits(round_to(posenc.sinusoid_fill(plan, 3, start_pos=2), dtype)))
    times = torch.tensor([0.5, 999.25])
    steps = posenc.sinusoid_fill_timesteps(plan, times, dtype=dtype)
    assert np.array_equal(bits(steps), bits(round_to(
        posenc.sinusoid_fill_timesteps(plan, times.numpy()), dtype)))
    x = random_tensor((3, 12), dtype, 9)
    widened = x.float().numpy().copy()
    posenc.sinusoid_add(plan, x, positions=positions)
    posenc.sinusoid_add(plan, widened, positions=positions.numpy())
    assert np.array_equal(bits(x), bits(round_to(widened, dtype)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_alibi_tensors_and_16_bit(dtype):
    slopes = torch.from_numpy(posenc.alibi_slopes(4))
    scores = random_tensor((4, 3, 9), dtype, 10, scale=4.0)
    widened = scores.float().numpy().copy()
    posenc.alibi_add(scores, slopes, q_offset=6, scale=0.5, causal=True)
    posenc.alibi_add(widened, slopes.numpy(), q_offset=6, scale=0.5, causal=True)
    assert np.array_equal(bits(scores), bits(round_to(widened, dtype)))
    bias = posenc.alibi_bias(slopes, 3, 9, q_offset=6, dtype=dtype)
    assert isinstance(bias, torch.Tensor) and bias.dtype == TORCH[dtype]
    assert np.array_equal(bits(bias), bits(round_to(posenc.alibi_bias(slopes.numpy(), 3, 9, q_offset=6),
                                                    dtype)))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_alibi_softmax_is_softmax_symmetric(dtype):
    slopes = posenc.alibi_slopes(4)
    scores = random_tensor((4, 5, 11), dtype, 11, scale=3.0)
    expected = posenc.softmax(scores, scale=0.25, slopes=slopes, q_offset=6, causal=True,
                              alibi="symmetric")
    posenc.alibi_softmax(scores, slopes, q_offset=6, scale=0.25, causal=True)
    assert np.array_equal(bits(scores), bits(expected))


def test_alibi_softmax_refuses_float16():
    with pytest.raises(TypeError, match="float32 or bfloat16"):
        posenc.alibi_softmax(torch.zeros((1, 2, 3), dtype=torch.float16), [0.5])


@pytest.mark.parametrize("x_dtype", DTYPES)
@pytest.mark.parametrize("out_dtype", DTYPES)
def test_softmax_tensors(x_dtype, out_dtype):
    x = random_tensor((2, 3, 7), x_dtype, 12, scale=3.0)
    mask = torch.zeros((3, 7))
    mask[:, 5:] = -float("inf")
    kpos = torch.arange(7) * 2
    y = posenc.softmax(x, mask=mask, kpos=kpos, qpos=torch.tensor([4, 8, 12]),
                       slopes=torch.tensor([0.5, 0.25]), out_dtype=out_dtype)
    assert isinstance(y, torch.Tensor) and y.dtype == TORCH[out_dtype]
    ref = posenc.softmax(numpy_of(x), mask=mask.numpy(), kpos=kpos.numpy(), qpos=[4, 8, 12],
                         slopes=[0.5, 0.25], x_dtype=x_dtype, out_dtype=out_dtype)
    assert np.array_equal(bits(y), bits(ref))
    in_place = x.clone()
    if x_dtype == out_dtype:
        assert posenc.softmax(in_place, out=in_place, mask=mask, kpos=kpos,
                              qpos=torch.tensor([4, 8, 12]),
                              slopes=torch.tensor([0.5, 0.25])) is in_place
        assert np.array_equal(bits(in_place), bits(y))


def test_softmax_bool_mask_tensor():
    x = random_tensor((1, 2, 4), "float32", 13)
    keep = torch.tensor([[True, True, False, True], [True, False, False, False]])
    y = posenc.softmax(x, mask=keep)
    assert y[0, 0, 2] == 0 and y[0, 1, 1:].abs().sum() == 0
    assert torch.allclose(y.sum(-1), torch.ones(1, 2))


def test_learned_add_tensors():
    table = random_tensor((10, 6), "float32", 14)
    x = random_tensor((3, 6), "float32", 15)
    expected = x.numpy() + table.numpy()[[2, 9, 0]]
    posenc.learned_add(table, x, positions=torch.tensor([2, 9, 0]))
    assert np.array_equal(x.numpy(), expected)


def test_tensor_errors():
    plan = posenc.RopePlan(8)
    with pytest.raises(TypeError, match="float64"):
        posenc.rope(plan, torch.zeros((2, 1, 8), dtype=torch.float64))
    with pytest.raises(TypeError, match="CPU"):
        posenc.rope(plan, torch.zeros((2, 1, 8), device="meta"))
    with pytest.raises(TypeError, match="one storage type"):
        posenc.rope(plan, torch.zeros((2, 1, 8)), torch.zeros((2, 1, 8), dtype=torch.float16))


# --- autograd: recorded, or refused; never a silent detach (issue 26, case 3) ---------------

def torch_rope64(x, positions, rotary_dim, base, axes):
    """HF's rotate-half formula in float64 on a [B, L, H, D] or [B, H, L, D] tensor, with
    angles p * base^(-2i/R) in float64: an autograd reference independent of posenc."""
    half = rotary_dim // 2
    inv = base ** (-np.arange(half) * 2.0 / rotary_dim)
    angles = torch.from_numpy(np.asarray(positions, np.float64)[..., None] * inv)  # [B, L, R/2]
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    cos, sin = (cos[:, :, None], sin[:, :, None]) if axes == "BLHD" else (cos[:, None],
                                                                        sin[:, None])
    x = x.double()
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    rotated = rot * cos + torch.cat((-rot[..., half:], rot[..., :half]), -1) * sin
    return torch.cat((rotated, rest), -1)


@pytest.mark.parametrize("axes", ["BLHD", "BHLD"])
def test_rope_out_records_the_gradient(axes):
    """rope_out used to cut the graph (its result had no grad_fn: the gradient of x was
    silently missing). Now y = rope_out(x) is differentiable; the gradient (posenc's inverse
    rotation) matches autograd through a float64 torch RoPE."""
    plan = posenc.RopePlan(12, 10000.0)
    shape = (2, 5, 3, 16) if axes == "BLHD" else (2, 3, 5, 16)
    leaf = random_tensor(shape, "float32", 20).requires_grad_()
    weight = random_tensor(shape, "float32", 21)
    positions = torch.arange(5).expand(2, 5) + torch.tensor([[0], [3000]])
    y = posenc.rope_out(plan, leaf * 1.0, positions=positions, axes=axes)
    assert y.requires_grad and y.grad_fn is not None
    (y * weight).sum().backward()
    got = leaf.grad.clone()
    leaf.grad = None
    ref = torch_rope64(leaf, positions.numpy(), 12, 10000.0, axes)
    (ref * weight.double()).sum().backward()
    torch.testing.assert_close(got, leaf.grad.float(), rtol=0, atol=2e-6)
    torch.testing.assert_close(y.detach(), ref.detach().float(), rtol=0, atol=2e-6)
    # the same through factors and M-RoPE (one section: plain RoPE), and into bfloat16
    factors = posenc.rope_factors(plan, positions=positions)
    leaf.grad = None
    posenc.rope_apply(factors, leaf, axes=axes).mul(weight).sum().backward()
    torch.testing.assert_close(leaf.grad, got, rtol=0, atol=0)
    leaf.grad = None
    pos3 = positions.expand(3, 2, 5)
    posenc.mrope_out(plan, [6, 0, 0], leaf, positions=pos3, axes=axes).mul(weight).sum().backward()
    torch.testing.assert_close(leaf.grad, got, rtol=0, atol=0)
    leaf.grad = None
    y16 = posenc.rope_out(plan, leaf, positions=positions, axes=axes, dst_dtype="bf16")
    assert y16.dtype == torch.bfloat16
    y16.float().mul(weight).sum().backward()
    assert leaf.grad.dtype == torch.float32
    got16 = leaf.grad.clone()
    leaf.grad = None  # the gradient reaching a bfloat16 result is bfloat16 (torch's rule)
    (torch_rope64(leaf, positions.numpy(), 12, 10000.0, axes)
     * weight.bfloat16().double()).sum().backward()
    torch.testing.assert_close(got16, leaf.grad.float(), rtol=0, atol=2e-6)


def test_in_place_and_non_differentiable_calls_refuse_tensors_that_require_grad():
    """posenc.rope on a tensor that requires grad used to write through a detached view:
    autograd saw nothing, so gradients were silently wrong. Every call that cannot record
    the gradient now raises, nothing written; under torch.no_grad() it runs."""
    plan = posenc.RopePlan(8)
    leaf = torch.ones((2, 3, 1, 8), requires_grad=True)
    q = leaf * 2.0  # a non-leaf in the graph
    before = q.detach().clone()
    with pytest.raises(RuntimeError, match=r"posenc\.rope .*in place.*rope_out"):
        posenc.rope(plan, q, start_pos=3, axes="BLHD")
    with pytest.raises(RuntimeError, match="in place"):
        posenc.rope(plan, q[0], start_pos=3)
    assert torch.equal(q.detach(), before)
    with pytest.raises(RuntimeError, match="dst"):
        posenc.rope_out(plan, q, dst=torch.empty_like(before), axes="BLHD")
    with pytest.raises(RuntimeError, match="records the gradient of src only"):
        posenc.rope_apply(posenc.rope_factors(plan, n_rows=3), before, axes="BLHD", dst=q)
    scores = torch.zeros((1, 2, 4), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"posenc\.softmax records no gradient"):
        posenc.softmax(scores)
    with pytest.raises(RuntimeError, match="no_grad"):
        posenc.softmax(torch.zeros((1, 2, 4)), mask=torch.zeros((2, 4), requires_grad=True))
    table = torch.zeros((10, 8), requires_grad=True)  # an nn.Embedding-like weight
    with pytest.raises(RuntimeError, match="learned_add"):
        posenc.learned_add(table, torch.zeros((3, 8)))
    with pytest.raises(RuntimeError, match="sinusoid_add"):
        posenc.sinusoid_add(posenc.SinusoidPlan(8), torch.zeros((3, 8)) + leaf[0, :, 0])
    with pytest.raises(RuntimeError, match="alibi_add"):
        posenc.alibi_add(scores * 1.0, [0.5])
    with pytest.raises(RuntimeError, match="from_freqs"):
        posenc.RopePlan.from_freqs(torch.ones(4, requires_grad=True))
    # without grad mode, in place as before (a parameter updated by an inference kernel)
    expected = before.numpy().copy()
    posenc.rope(plan, expected, start_pos=3, axes="BLHD")
    with torch.no_grad():
        posenc.rope(plan, q, start_pos=3, axes="BLHD")
    assert np.array_equal(q.detach().numpy(), expected)


def test_ml_dtypes_bfloat16_arrays():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    plan = posenc.RopePlan(8)
    x = random_tensor((3, 2, 8), "bfloat16", 16)
    as_ml = numpy_of(x).view(ml_dtypes.bfloat16)
    posenc.rope(plan, as_ml, start_pos=5)
    posenc.rope(plan, x, start_pos=5)
    assert np.array_equal(bits(x), as_ml.view(np.uint16).view(np.uint8))


# --- the other bindings --------------------------------------------------------------------

def test_kernel_queries():
    names = posenc.kernels()
    assert names[0] == "rope_f32" and "softmax_16" in names and len(names) == 15
    assert names[-1] == "sinusoid_f32_streamed"
    for name in names:
        assert posenc.kernel_isa(name) in posenc.available_isas()
        assert posenc.kernel_isa(name, "scalar") == "scalar"
    with pytest.raises(ValueError, match="unknown kernel"):
        posenc.kernel_isa("nope")
    with pytest.raises(ValueError, match="unknown ISA"):
        posenc.kernel_isa("rope_f32", "mmx")
    unavailable = [isa for isa in posenc.compiled_isas() if isa not in posenc.available_isas()]
    for isa in unavailable:
        with pytest.raises(ValueError, match="not available"):
            posenc.kernel_isa("rope_f32", isa)
    assert posenc.cpu_sve_vector_bits() >= 0


def test_from_freqs_f32_and_powf():
    inv = np.array([1.0, 0.1, 0.01, 3e-5], np.float32)
    plan = posenc.RopePlan.from_freqs_f32(torch.from_numpy(inv))
    assert np.array_equal(plan.freqs, inv.astype(np.float64))
    powf = posenc.RopePlan.powf(8, 10000.0)
    i = np.arange(4, dtype=np.float32)
    ref = np.float32(1.0) / np.power(np.float32(10000.0), (2 * i) / np.float32(8))
    assert np.all(np.abs(powf.freqs - ref) <= np.spacing(ref))


def test_hf_f32_is_torch_inv_freq_bitwise():
    """RopePlan.hf_f32 with the imported torch's capability: HF's default inv_freq formula
    evaluated by this torch, bit for bit."""
    for dim, base in ((64, 10000.0), (128, 500000.0), (80, 1000000.0), (48, 10000.0)):
        inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        plan = posenc.RopePlan.hf_f32(dim, base)
        assert np.array_equal(plan.freqs, inv.numpy().astype(np.float64)), (dim, base)


def test_hf_layout_tensor_needs_axes_or_fitting_positions():
    """HF's q [B, H, L, D] (a transposed view): its position_ids [B, L] tell the token axis
    when H != L; with H == L (or no positions) posenc refuses instead of reading [B, L, H, D]."""
    plan = posenc.RopePlan(16)
    positions = torch.arange(6).expand(2, 6) + torch.tensor([[0], [40]])
    q = random_tensor((2, 6, 4, 16), "float32", 17).transpose(1, 2)  # [B, H=4, L=6, D]
    named = posenc.rope_out(plan, q, positions=positions, axes="BHLD")
    assert torch.equal(posenc.rope_out(plan, q, positions=positions), named)
    square = random_tensor((2, 6, 6, 16), "float32", 18).transpose(1, 2)  # H == L
    before = square.clone()
    with pytest.raises(ValueError, match="axes"):
        posenc.rope(plan, square, positions=positions)
    assert torch.equal(square, before)


def test_softmax_hf_masks_as_tensors():
    """HF's integer attention_mask tensor (1 = attend) hides keys; a bfloat16 additive mask
    is added (widened to float32), not read as uint16 bits."""
    x = torch.zeros((1, 1, 4))
    y = posenc.softmax(x, mask=torch.tensor([1, 1, 1, 0]))
    assert torch.allclose(y[0, 0, :3], torch.full((3,), 1 / 3)) and y[0, 0, 3] == 0
    bf16 = torch.tensor([0.0, -1.0, 0.0, float("-inf")], dtype=torch.bfloat16)
    got = posenc.softmax(x, mask=bf16)
    assert torch.equal(got, posenc.softmax(x, mask=bf16.float()))
    B, H, n_q, n_k = 2, 3, 2, 5
    scores = random_tensor((B, H, n_q, n_k), "float32", 19)
    attention_mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    probs = posenc.softmax(scores, mask=attention_mask[:, None, None, :])
    ref = torch.softmax(scores.masked_fill(attention_mask[:, None, None, :] == 0,
                                           float("-inf")), dim=-1)
    assert torch.allclose(probs, ref, rtol=1e-5, atol=1e-7)
