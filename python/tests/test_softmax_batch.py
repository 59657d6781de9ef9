"""posenc.softmax on 4-D scores (posenc_softmax_batched), ggml's mask broadcasting (head h
reads mask head h % Hm, batch b mask batch b % Bm) and int64 positions, on every ISA.

The reference is independent of the batched path: one posenc.softmax call per (batch, head)
on a 3-D [1, n_q, n_k] slice with that head's mask slice, slope and sink picked here by the
modulo rule. Rows are computed independently, so the results must agree bit for bit."""

import numpy as np
import posenc
import pytest

from draws import normal_f32

INT32_MAX = np.iinfo(np.int32).max


def per_head_reference(x, mask, slopes=None, sinks=None, **kw):
    """One posenc.softmax call per (b, h), mask [Bm, Hm, q, k] by the modulo rule."""
    n_batch, n_heads = x.shape[:2]
    out = np.empty_like(x)
    m4 = None if mask is None else mask[(None,) * (4 - mask.ndim)]
    for b in range(n_batch):
        for h in range(n_heads):
            m = None if m4 is None else m4[b % m4.shape[0], h % m4.shape[1]]
            out[b, h:h + 1] = posenc.softmax(
                x[b, h:h + 1], mask=m,
                slopes=None if slopes is None else slopes[h:h + 1],
                sinks=None if sinks is None else sinks[h:h + 1], **kw)
    return out


def ggml_mask(rng, shape, dtype=np.float32):
    values = rng.choice(np.array([0.0, -np.inf, 1.0, -0.5, -2.0], np.float32), size=shape)
    return values.astype(dtype)


@pytest.mark.parametrize("mask_shape", [None, (3, 5), (1, 3, 5), (2, 3, 5), (4, 3, 5),
                                        (2, 1, 3, 5), (3, 2, 3, 5), (6, 4, 3, 5), (1, 1, 5)])
@pytest.mark.parametrize("mask_dtype", [np.float32, np.float16])
def test_batched_equals_one_call_per_batch_and_head(isa, rng, mask_shape, mask_dtype):
    posenc.set_isa(isa)
    x = normal_f32(rng, (6, 4, 3, 5)) * 3
    mask = None if mask_shape is None else ggml_mask(rng, mask_shape, mask_dtype)
    slopes = np.array([0.5, 0.25, 0.125, 0.0625], np.float32)
    sinks = normal_f32(rng, (4,))
    kw = dict(scale=0.5, causal=True, q_offset=2)
    got = posenc.softmax(x, mask=mask, slopes=slopes, sinks=sinks, **kw)
    want = per_head_reference(x, mask, slopes, sinks, **kw)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_batched_types_layouts_in_place(isa, rng):
    posenc.set_isa(isa)
    x = normal_f32(rng, (3, 8, 4, 40))[:, ::2, :, :33]  # gaps between heads and rows
    mask = ggml_mask(rng, (3, 2, 4, 33))
    want = per_head_reference(x, mask)
    np.testing.assert_array_equal(posenc.softmax(x, mask=mask).view(np.uint32),
                                  want.view(np.uint32))
    # bf16 probabilities: the f32 result rounded, as the 3-D calls give it
    half = posenc.softmax(x, mask=mask, out_dtype="bf16")
    np.testing.assert_array_equal(half, per_head_reference_16(x, mask, "bf16"))
    # x repeated over batches (a zero batch stride)
    one = np.broadcast_to(x[:1], x.shape)
    np.testing.assert_array_equal(posenc.softmax(one, mask=mask).view(np.uint32),
                                  per_head_reference(np.ascontiguousarray(one), mask)
                                  .view(np.uint32))
    # in place
    y = np.ascontiguousarray(x)
    assert posenc.softmax(y, out=y, mask=mask) is y
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))


def per_head_reference_16(x, mask, out_dtype):
    n_batch, n_heads = x.shape[:2]
    out = np.empty(x.shape, np.uint16)
    for b in range(n_batch):
        for h in range(n_heads):
            out[b, h:h + 1] = posenc.softmax(x[b, h:h + 1], mask=mask[b % mask.shape[0],
                                                                      h % mask.shape[1]],
                                             out_dtype=out_dtype)
    return out


@pytest.mark.parametrize("mask_shape", [(3, 3, 5), (5, 3, 5), (4, 1, 3, 5), (5, 4, 3, 5),
                                        (2, 2, 2, 3, 5)])
def test_mask_that_does_not_broadcast_is_refused(rng, mask_shape):
    x = normal_f32(rng, (6, 4, 3, 5))
    out = np.full_like(x, 7.0)
    with pytest.raises(ValueError, match="broadcast|must be"):
        posenc.softmax(x, out=out, mask=np.zeros(mask_shape, np.float32))
    assert np.all(out == 7.0)
    # a 3-D x takes no batch axis in its mask
    with pytest.raises(ValueError, match="must be"):
        posenc.softmax(x[0], mask=np.zeros((1, 4, 3, 5), np.float32))


def test_int64_positions_equal_int32(isa, rng):
    posenc.set_isa(isa)
    n_q, n_k = 1030, 1500  # both past the library's stack buffer: converted on the heap
    x = normal_f32(rng, (2, n_q, n_k))
    kpos = (INT32_MAX - n_k + np.arange(n_k)).astype(np.int32)
    kpos[[3, 700]] = -1  # empty cells
    qpos = (INT32_MAX - n_k + (np.arange(n_q) * 7) % n_k).astype(np.int32)
    kw = dict(causal=True, window=600, slopes=[0.5, 0.03125], kpos_neg_hidden=True)
    want = posenc.softmax(x, kpos=kpos, qpos=qpos, **kw)
    for kp, qp in ((kpos.astype(np.int64), qpos.astype(np.int64)),
                   (kpos.astype(np.int64), qpos), (kpos, qpos.astype(np.int64))):
        got = posenc.softmax(x, kpos=kp, qpos=qp, **kw)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    # Python ints (int64 arrays) on the batched path
    x4 = normal_f32(rng, (2, 2, 3, 6))
    got = posenc.softmax(x4, kpos=[0, 1, 2, 3, 4, 5], qpos=[3, 4, 5], causal=True)
    want = posenc.softmax(x4, kpos=np.arange(6, dtype=np.int32),
                          qpos=np.arange(3, 6, dtype=np.int32), causal=True)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("which,value", [("kpos", 2 ** 31), ("kpos", -2 ** 31 - 1),
                                         ("qpos", 2 ** 40)])
def test_int64_positions_out_of_int32_range_are_refused(rng, which, value):
    x = normal_f32(rng, (2, 3, 4))
    out = np.full_like(x, 7.0)
    pos = np.arange(4 if which == "kpos" else 3, dtype=np.int64)
    pos[1] = value
    with pytest.raises(posenc.PosencError, match="int32 range"):
        posenc.softmax(x, out=out, kpos_neg_hidden=True, **{which: pos})
    assert np.all(out == 7.0)


def test_batched_refusal_writes_nothing(rng):
    """One bad value anywhere refuses the whole batched call, before any batch is written."""
    x = normal_f32(rng, (3, 2, 2, 4))
    out = np.full_like(x, 7.0)
    with pytest.raises(posenc.PosencError):
        posenc.softmax(x, out=out, sinks=[0.0, np.inf])
    assert np.all(out == 7.0)
    # out batches that overlap each other (a zero batch stride on the destination)
    base = np.full((1, 2, 2, 4), 7.0, np.float32)
    y = np.lib.stride_tricks.as_strided(base, x.shape, (0,) + base.strides[1:], writeable=True)
    with pytest.raises(ValueError, match="stride"):
        posenc.softmax(x, out=y)
    assert np.all(base == 7.0)


def test_torch_batched_and_int64_positions(rng):
    torch = pytest.importorskip("torch")
    x = normal_f32(rng, (2, 4, 3, 5))
    mask = ggml_mask(rng, (2, 2, 3, 5))
    kpos = torch.arange(5, dtype=torch.int64)
    got = posenc.softmax(torch.from_numpy(x), mask=torch.from_numpy(mask), kpos=kpos,
                         qpos=torch.tensor([2, 3, 4], dtype=torch.int64), causal=True)
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == x.shape
    want = per_head_reference(x, mask, kpos=np.arange(5, dtype=np.int32),
                              qpos=np.array([2, 3, 4], np.int32), causal=True)
    np.testing.assert_array_equal(got.numpy().view(np.uint32), want.view(np.uint32))
    with pytest.raises(posenc.PosencError, match="int32 range"):
        posenc.softmax(torch.from_numpy(x), kpos=kpos + 2 ** 31, kpos_neg_hidden=True)
