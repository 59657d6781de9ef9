"""posenc.softmax (posenc_softmax) against a NumPy float64 reference, on every ISA.

The reference follows the header's formula: t is computed in float32 step by step in the
header's order (u = scale * x, + mask or + slope * mask, + the ALiBi term), with soft-capping
the exact c tanh(u / c) and the terms after it added in float64 (the header's bound is
against that); then the exact softmax with the sink, in float64. Every y must be within
POSENC_SOFTMAX_REL_TOLERANCE * y* + POSENC_SOFTMAX_ABS_TOLERANCE (soft-capping: plus
c 2^-20 relative), hidden keys and all-hidden rows exactly +0. A 16-bit y is the float32
result rounded once to nearest even: checked bit for bit against the float32 call's result
rounded here (bfloat16 by the integer rounding below, float16 by NumPy), and so within the
bound plus one rounding (2^-8 relative for bfloat16, 2^-11 for float16: a rounding to
nearest moves a value by up to half a unit in its last place, 2^-8 of a bfloat16 just above
a power of two).
"""

import numpy as np
import posenc
import pytest

from draws import normal_f32

INVALID = "invalid argument"
REL = 2.0 ** -18  # POSENC_SOFTMAX_REL_TOLERANCE
ABS = 2.0 ** -24  # POSENC_SOFTMAX_ABS_TOLERANCE
ROUNDING = {"f32": 0.0, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}


# --- independent 16-bit conversions and the reference ---------------------------------------

def bf16_bits(x):
    """float32 -> bfloat16 bits (uint16), round to nearest, ties to even; NaN stays NaN."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    one, half, sixteen = np.uint64(1), np.uint64(0x7FFF), np.uint64(16)  # NumPy 1.x casting
    rounded = (u + half + ((u >> sixteen) & one)) >> sixteen
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, (u >> sixteen) | np.uint64(0x40), rounded).astype(np.uint16)


def bf16_widen(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def store(values, kind):
    """float32 values in storage type kind (bf16 as uint16 bits)."""
    values = np.asarray(values, np.float32)
    return {"f32": values, "bf16": bf16_bits(values), "f16": values.astype(np.float16)}[kind]


def widen(array, kind):
    return bf16_widen(array) if kind == "bf16" else np.asarray(array).astype(np.float32)


def reference(x, scale=1.0, mask=None, slopes=None, sinks=None, kpos=None, qpos=None,
              q_offset=0, causal=False, window=None, softcap=None, alibi="signed",
              kpos_neg_hidden=False):
    """The header's softmax of float32 scores x [H, n_q, n_k] in float64."""
    x = np.asarray(x, np.float32)
    n_heads, n_q, n_k = x.shape
    kp = np.arange(n_k, dtype=np.int64) if kpos is None else np.asarray(kpos, np.int64)
    qp = q_offset + np.arange(n_q, dtype=np.int64) if qpos is None else np.asarray(qpos, np.int64)
    d = kp[None, :] - qp[:, None]
    hidden = np.zeros(x.shape, bool)
    if kpos_neg_hidden:
        hidden |= kp < 0
    if causal:
        hidden |= d > 0
    if window is not None:
        hidden |= -d >= window
    with np.errstate(all="ignore"):
        t = np.float32(scale) * x
        if softcap is not None:
            t = softcap * np.tanh(t.astype(np.float64) / np.float32(softcap))
        sl = None if slopes is None else np.asarray(slopes, np.float32)[:, None, None]
        if mask is not None:
            m = np.broadcast_to(np.asarray(mask).astype(np.float32), x.shape)
            hidden |= m == -np.inf
            t = t + (sl * m if alibi == "mask_slope" else m)
        if slopes is not None and alibi != "mask_slope":
            t = t + (-(sl * np.abs(d).astype(np.float32)) if alibi == "symmetric"
                     else sl * d.astype(np.float32))
        t = np.where(hidden, -np.inf, t.astype(np.float64))
        sink = (np.full(n_heads, -np.inf) if sinks is None
                else np.asarray(sinks, np.float32).astype(np.float64))[:, None, None]
        bad = np.any(np.isnan(t) | (t == np.inf), axis=-1, keepdims=True)
        top = np.max(np.where(bad, -np.inf, t), axis=-1, keepdims=True)
        empty = top == -np.inf
        top = np.maximum(top, sink)
        e = np.where(t == -np.inf, 0.0, np.exp(t - np.where(empty, 0.0, top)))
        y = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - top))
    y = np.where(empty, 0.0, y)
    return np.where(bad & ~hidden, np.nan, np.where(hidden, 0.0, y)), hidden


def assert_softmax(got, kind, want, hidden, softcap=None):
    """got (storage type kind) within the header's bound of want; hidden keys exactly +0."""
    y = widen(got, kind).astype(np.float64)
    bits = np.asarray(got).view(np.uint16 if kind != "f32" else np.uint32)
    assert np.all(bits[hidden] == 0), "a hidden key is not +0"
    rel = REL + (softcap * 2.0 ** -20 if softcap is not None else 0.0)
    bound = rel * want + ABS
    bound += ROUNDING[kind] * (want + bound) + (2.0 ** -25 if kind == "f16" else 0.0)
    assert np.array_equal(np.isnan(y), np.isnan(want))
    err = np.abs(np.where(np.isnan(want), 0.0, y - want))
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), f"at {worst}: got {y[worst]!r}, want {want[worst]!r}"
    assert not np.any(np.signbit(y)), "a negative probability"


def scores(rng, shape, scale=4.0):
    return normal_f32(rng, shape, scale)


# --- every option against the reference -----------------------------------------------------

def test_plain_out_of_place_and_in_place(isa, rng):
    posenc.set_isa(isa)
    x = scores(rng, (3, 5, 37))
    original = x.copy()
    y = posenc.softmax(x, scale=0.125)
    np.testing.assert_array_equal(x, original)  # x only read
    want, hidden = reference(x, scale=0.125)
    assert_softmax(y, "f32", want, hidden)
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-5)
    same = posenc.softmax(x, out=x, scale=0.125)
    assert same is x
    np.testing.assert_array_equal(x.view(np.uint32), y.view(np.uint32))
    # 2-D: one head
    two = posenc.softmax(original[1], scale=0.125)
    np.testing.assert_array_equal(two.view(np.uint32), y[1].view(np.uint32))


@pytest.mark.parametrize("form", ["shared f32", "per-head f32", "shared f16", "bool"])
def test_mask(isa, rng, form):
    posenc.set_isa(isa)
    h, n_q, n_k = 2, 6, 70
    x = scores(rng, (h, n_q, n_k))
    shape = (h, n_q, n_k) if form == "per-head f32" else (n_q, n_k)
    values = np.where(rng.random(shape) < 0.3, -np.inf, rng.uniform(-3, 3, shape))
    values[..., 0, :] = -np.inf  # a row with nothing visible
    if form == "bool":
        mask = values > -np.inf  # True = attend
        values = np.where(mask, 0.0, -np.inf)
    else:
        mask = values.astype(np.float16 if form == "shared f16" else np.float32)
    y = posenc.softmax(x, mask=mask)
    want, hidden = reference(x, mask=np.asarray(values, mask.dtype if form != "bool" else
                                                np.float32))
    assert_softmax(y, "f32", want, hidden)
    assert np.all(y[:, 0, :] == 0)


def test_mask_views_without_copy(isa, rng):
    """A mask row-padded inside a wider buffer, heads repeated with stride 0 (broadcast)."""
    posenc.set_isa(isa)
    x = scores(rng, (3, 4, 20))
    buffer = np.where(rng.random((4, 32)) < 0.2, -np.inf, 0.5).astype(np.float32)
    mask = np.broadcast_to(buffer[:, 5:25], (3, 4, 20))
    want, hidden = reference(x, mask=mask)
    assert_softmax(posenc.softmax(x, mask=mask), "f32", want, hidden)
    # a key-padding mask [1, n_k] (rows repeated: copied for the C layout)
    pad = np.where(np.arange(20) < 15, 0.0, -np.inf).astype(np.float32)[None, :]
    want, hidden = reference(x, mask=pad)
    assert_softmax(posenc.softmax(x, mask=pad), "f32", want, hidden)


@pytest.mark.parametrize("case", ["q_offset", "kpos qpos", "window", "kpos window"])
def test_positions_causal_window(isa, rng, case):
    posenc.set_isa(isa)
    h, n_q, n_k = 2, 7, 150
    x = scores(rng, (h, n_q, n_k))
    kw = dict(causal=True)
    if case == "q_offset":
        kw.update(q_offset=n_k - n_q)
    elif case == "window":
        kw.update(q_offset=n_k - n_q, window=40)
    else:
        kw.update(kpos=np.cumsum(rng.integers(0, 3, n_k)).astype(np.int32),
                  qpos=np.sort(rng.integers(100, 260, n_q)).astype(np.int32))
        if case == "kpos window":
            kw.update(window=25)
    want, hidden = reference(x, **kw)
    assert_softmax(posenc.softmax(x, **kw), "f32", want, hidden)
    if case == "q_offset":  # the positions as arrays give the same bits
        same = posenc.softmax(x, causal=True, kpos=np.arange(n_k),
                              qpos=n_k - n_q + np.arange(n_q))
        got = posenc.softmax(x, **kw)
        assert_softmax(same, "f32", want, hidden)
        np.testing.assert_allclose(same, got, rtol=2 * REL, atol=2 * ABS)


def test_sinks(isa, rng):
    posenc.set_isa(isa)
    x = scores(rng, (4, 5, 33))
    sinks = np.array([0.0, 2.5, -3.0, 40.0], np.float32)  # the last dwarfs its head's scores
    want, hidden = reference(x, sinks=sinks, causal=True, q_offset=28)
    y = posenc.softmax(x, sinks=sinks, causal=True, q_offset=28)
    assert_softmax(y, "f32", want, hidden)
    assert np.all(y.sum(axis=-1) < 1.0) and np.all(y[3] < 1e-6)


@pytest.mark.parametrize("cap", [50.0, 30.0, 1.0])
def test_softcap(isa, rng, cap):
    posenc.set_isa(isa)
    x = scores(rng, (2, 4, 45), scale=60.0)
    x[0, 0, 3], x[0, 1, 5] = np.inf, -np.inf  # capped to +-c
    mask = np.where(rng.random((4, 45)) < 0.2, -np.inf, -1.5).astype(np.float32)
    want, hidden = reference(x, softcap=cap, mask=mask, scale=0.5)
    assert_softmax(posenc.softmax(x, softcap=cap, mask=mask, scale=0.5), "f32", want, hidden,
                   softcap=cap)


@pytest.mark.parametrize("alibi", ["signed", "symmetric", "mask_slope"])
def test_alibi_forms(isa, rng, alibi):
    posenc.set_isa(isa)
    h, n_q, n_k = 4, 5, 60
    x = scores(rng, (h, n_q, n_k))
    slopes = posenc.alibi_slopes(h)
    q_offset = n_k - n_q
    kw = dict(slopes=slopes, alibi=alibi, causal=True, q_offset=q_offset, scale=0.25)
    if alibi == "mask_slope":  # ggml passes -|qpos - kpos| in the mask
        d = np.arange(n_k)[None, :] - (q_offset + np.arange(n_q))[:, None]
        kw["mask"] = np.where(d > 0, -np.inf, -np.abs(d)).astype(np.float16)
    want, hidden = reference(x, **kw)
    y = posenc.softmax(x, **kw)
    assert_softmax(y, "f32", want, hidden)
    if alibi == "symmetric":
        # posenc_alibi_add_f32's scores then a plain causal softmax: the same t, the same bits
        biased = x.copy()
        posenc.alibi_add(biased, slopes, q_offset=q_offset, scale=0.25, causal=True)
        plain = posenc.softmax(biased, causal=True, q_offset=q_offset)
        np.testing.assert_array_equal(plain.view(np.uint32), y.view(np.uint32))
    if alibi == "signed":  # the visible keys of a causal row: -slope * |d| too
        sym = posenc.softmax(x, **dict(kw, alibi="symmetric"))
        np.testing.assert_array_equal(sym.view(np.uint32), y.view(np.uint32))


PAIRS = [("f32", "bf16"), ("f32", "f16"), ("bf16", "f32"), ("f16", "f32"), ("bf16", "bf16"),
         ("f16", "f16"), ("bf16", "f16")]


@pytest.mark.parametrize("x_kind,y_kind", PAIRS)
def test_16bit_types(isa, rng, x_kind, y_kind):
    """16-bit x widened exactly; a 16-bit y is the f32 call's result rounded once."""
    posenc.set_isa(isa)
    src = store(scores(rng, (2, 4, 53)), x_kind)
    x_dtype = "float16" if x_kind == "f16" else None
    if x_kind == "f16" and rng.random() < 0.5:
        src, x_dtype = src.view(np.uint16), "float16"  # f16 bits in uint16
    kw = dict(causal=True, q_offset=49, mask=np.where(rng.random((4, 53)) < 0.1, -np.inf, 0.0))
    wide = widen(src.view(np.float16) if x_kind == "f16" else src, x_kind)
    f32 = posenc.softmax(wide, **kw)
    y = posenc.softmax(src, out_dtype={"f32": "float32", "bf16": "bf16", "f16": "f16"}[y_kind],
                       x_dtype=x_dtype, **kw)
    # a new out has x's NumPy dtype when it holds x's type (float16 bits in uint16 stay so)
    f16_dtype = src.dtype if x_kind == "f16" else np.float16
    assert y.dtype == {"f32": np.float32, "bf16": np.uint16, "f16": f16_dtype}[y_kind]
    bits = np.uint32 if y_kind == "f32" else np.uint16
    np.testing.assert_array_equal(y.view(bits), store(f32, y_kind).view(bits))
    if y_kind == "f16":
        y = y.view(np.float16)
    want, hidden = reference(wide, **kw)
    assert_softmax(y, y_kind, want, hidden)


@pytest.mark.parametrize("kind", ["bf16", "f16"])
def test_16bit_in_place(isa, rng, kind):
    posenc.set_isa(isa)
    x = store(scores(rng, (3, 3, 41)), kind)
    wide = widen(x, kind)
    want, hidden = reference(wide, window=16, q_offset=38)
    assert posenc.softmax(x, out=x, window=16, q_offset=38) is x
    assert_softmax(x, kind, want, hidden)


def test_views_without_copies(isa, rng):
    """[n_q, H, n_k] storage seen as [H, n_q, n_k]; out into a padded buffer whose padding is
    never touched."""
    posenc.set_isa(isa)
    storage = scores(rng, (5, 3, 30))  # [n_q, H, n_k]
    x = storage.transpose(1, 0, 2)
    buffer = np.full((3, 5, 40), 7.0, np.float32)
    out = buffer[:, :, 4:34]
    assert posenc.softmax(x, out=out, causal=True, q_offset=25) is out
    want, hidden = reference(x, causal=True, q_offset=25)
    assert_softmax(out, "f32", want, hidden)
    assert np.all(buffer[:, :, :4] == 7.0) and np.all(buffer[:, :, 34:] == 7.0)
    # heads repeated with stride 0 (one score matrix for every head), different sinks
    shared = np.broadcast_to(storage[:, 0, :], (3, 5, 30))
    sinks = [0.0, 1.0, 2.0]
    want, hidden = reference(shared, sinks=sinks)
    assert_softmax(posenc.softmax(shared, sinks=sinks), "f32", want, hidden)


# --- special rows ---------------------------------------------------------------------------

def test_special_rows(isa):
    posenc.set_isa(isa)
    x = np.zeros((1, 4, 20), np.float32)
    x[0, 0] = -np.inf  # all -inf: zeros
    x[0, 1] = -np.inf
    x[0, 1, 7] = 3.0  # one finite value: exactly 1 there
    x[0, 2, 4] = np.nan  # a NaN: every y of the row NaN
    x[0, 3, 9] = np.inf  # +inf: NaN too
    y = posenc.softmax(x)
    assert np.all(y[0, 0].view(np.uint32) == 0)
    assert y[0, 1, 7] == 1.0 and np.all(np.delete(y[0, 1], 7).view(np.uint32) == 0)
    assert np.all(np.isnan(y[0, 2])) and np.all(np.isnan(y[0, 3]))
    y = posenc.softmax(x, sinks=[0.0])  # a sink: less than 1, still zeros for the -inf row
    assert np.all(y[0, 0] == 0) and 0.9 < y[0, 1, 7] < 1.0
    y = posenc.softmax(x, scale=0.0)  # 0 * inf is NaN
    assert np.all(np.isnan(y[0, 0])) and np.all(np.isnan(y[0, 3]))
    empty = np.zeros((2, 3, 0), np.float32)
    assert posenc.softmax(empty).shape == (2, 3, 0)  # no keys: a no-op
    assert posenc.softmax(np.zeros((0, 3, 5), np.float32), slopes=[]).shape == (0, 3, 5)


def test_hidden_key_in_nan_row_is_zero(isa):
    """posenc.h: "a NaN t of a visible key makes every visible y of its row NaN; hidden keys
    still get +0": the mask's -inf keys and the window's hidden keys before the window."""
    posenc.set_isa(isa)
    x = np.ones((1, 1, 41), np.float32)
    x[0, 0, 39] = np.nan
    mask = np.zeros((1, 41), np.float32)
    mask[0, 40] = -np.inf
    y = posenc.softmax(x, mask=mask, window=2, q_offset=40)
    assert np.isnan(y[0, 0, 39]) and y[0, 0, 40] == 0  # the mask's hidden key
    assert np.all(y[0, 0, :39] == 0)  # the window's


# --- errors ---------------------------------------------------------------------------------

def test_python_errors(rng):
    x = scores(rng, (2, 3, 8))
    with pytest.raises(TypeError, match="dtype"):
        posenc.softmax(x.astype(np.float64))
    with pytest.raises(ValueError, match="3-D"):
        posenc.softmax(x[0, 0])
    with pytest.raises(ValueError, match="shape"):
        posenc.softmax(x, out=np.empty((2, 3, 9), np.float32))
    read_only = np.empty_like(x)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        posenc.softmax(x, out=read_only)
    with pytest.raises(ValueError, match="slopes"):
        posenc.softmax(x, slopes=[0.5])
    with pytest.raises(ValueError, match="kpos"):
        posenc.softmax(x, kpos=np.arange(7))
    with pytest.raises(ValueError, match="either qpos or q_offset"):
        posenc.softmax(x, qpos=[0, 1, 2], q_offset=4)
    with pytest.raises(ValueError, match="alibi"):
        posenc.softmax(x, alibi="both")
    with pytest.raises(ValueError, match="broadcast"):
        posenc.softmax(x, mask=np.zeros((3, 7), np.float32))
    with pytest.raises(TypeError, match="mask"):
        posenc.softmax(x, mask=np.zeros((3, 8), np.uint16))
    with pytest.raises(ValueError, match="query axis"):
        posenc.softmax(np.broadcast_to(x[:, :1], x.shape))
    with pytest.raises(TypeError, match="does not hold"):
        posenc.softmax(x, out_dtype="bf16", out=np.empty_like(x))


def test_c_status_errors_write_nothing(isa, rng):
    posenc.set_isa(isa)
    x = scores(rng, (2, 3, 8))
    out = np.full_like(x, 5.0)
    original = x.copy()
    bad = [dict(scale=np.nan), dict(scale=np.inf), dict(slopes=[0.5, np.nan]),
           dict(sinks=[np.inf, 0.0]), dict(window=0), dict(softcap=0.0), dict(softcap=-1.0),
           dict(kpos=-np.arange(8)), dict(qpos=[0, -1, 2]), dict(q_offset=-1),
           dict(q_offset=2 ** 31 - 2), dict(alibi="mask_slope", slopes=[0.5, 0.25]),
           dict(alibi="mask_slope", mask=np.zeros((3, 8), np.float32))]
    for kw in bad:
        with pytest.raises(posenc.PosencError, match=INVALID) as error:
            posenc.softmax(x, out=out, **kw)
        assert error.value.status == 1, kw
        np.testing.assert_array_equal(out, 5.0)
        np.testing.assert_array_equal(x, original)
    # out overlapping x (not the same view)
    buffer = rng.standard_normal(2 * 3 * 8 + 1).astype(np.float32)
    before = buffer.copy()
    with pytest.raises(posenc.PosencError, match=INVALID):
        posenc.softmax(buffer[:-1].reshape(2, 3, 8), out=buffer[1:].reshape(2, 3, 8))
    np.testing.assert_array_equal(buffer, before)
    # the mask inside out
    with pytest.raises(posenc.PosencError, match=INVALID):
        posenc.softmax(x, out=out, mask=out[0])
    np.testing.assert_array_equal(out, 5.0)


def test_negative_key_positions(isa, rng):
    """Empty KV-cache cells (kpos < 0, llama.cpp's -1): allowed where the mask hides them
    (the same bits as valid positions there) or with kpos_neg_hidden=True (hidden: +0, the
    rest as the masked call's); a negative kpos at a key left visible is an error that
    writes nothing."""
    posenc.set_isa(isa)
    h, n_q, n_k = 2, 3, 40
    x = scores(rng, (h, n_q, n_k))
    j = np.arange(n_k)
    empty = (j % 4 == 1) | (j >= 30)
    valid = j.astype(np.int32)
    neg = np.where(empty, -1, valid).astype(np.int32)
    neg[5] = np.iinfo(np.int32).min  # its kpos - qpos passes the int32 range
    mask = np.broadcast_to(np.where(empty, -np.inf, 0.0).astype(np.float32), (n_q, n_k))
    kw = dict(causal=True, window=20, slopes=[0.5, 0.25], qpos=[20, 35, 39], scale=0.5)
    masked = posenc.softmax(x, mask=mask, kpos=neg, **kw)
    np.testing.assert_array_equal(
        masked.view(np.uint32), posenc.softmax(x, mask=mask, kpos=valid, **kw).view(np.uint32))
    want, hidden = reference(x, mask=mask, kpos=neg, **kw)
    assert_softmax(masked, "f32", want, hidden)
    for kind in ("f32", "bf16"):
        flagged = posenc.softmax(x, kpos=neg, kpos_neg_hidden=True, out_dtype=kind, **kw)
        want, hidden = reference(x, kpos=neg, kpos_neg_hidden=True, **kw)
        assert np.all(hidden[:, :, empty])
        assert_softmax(flagged, kind, want, hidden)
        as_masked = posenc.softmax(x, mask=mask, kpos=neg, out_dtype=kind, **kw)
        np.testing.assert_array_equal(flagged, as_masked)
    # left visible: no mask; the mask open at one empty cell in one row; causal does not hide
    out = np.full_like(x, 5.0)
    original = x.copy()
    open_row = np.array(mask)
    open_row[1, 1] = 0.0
    for bad in (dict(kpos=neg), dict(kpos=neg, mask=open_row),
                dict(kpos=np.where(j == 3, -1, valid), causal=True)):
        with pytest.raises(posenc.PosencError, match=INVALID) as error:
            posenc.softmax(x, out=out, **bad)
        assert "kpos" in str(error.value)
        np.testing.assert_array_equal(out, 5.0)
        np.testing.assert_array_equal(x, original)
        posenc.softmax(x, out=out, kpos_neg_hidden=True, **bad)  # accepted with the flag
        out[...] = 5.0


# --- what a mask means, by its type; HF's 4-D scores (issue 26, case 2) ---------------------

def test_integer_mask_is_hf_attention_mask():
    """HF's attention_mask is 1 = attend, 0 = masked (integers). It used to be added to the
    scores as numbers: [1, 1, 1, 0] gave 0.30 / 0.30 / 0.30 / 0.11. Now it hides the 0 keys:
    1/3 each and an exact 0, as a bool mask does."""
    x = np.zeros((1, 1, 4), np.float32)
    for dtype in (np.int64, np.int32, np.uint8, np.int8):
        y = posenc.softmax(x, mask=np.array([1, 1, 1, 0], dtype))
        np.testing.assert_allclose(y[0, 0, :3], 1 / 3, rtol=REL, atol=ABS)
        assert y[0, 0, 3] == 0.0
        np.testing.assert_array_equal(y, posenc.softmax(x, mask=np.array([True] * 3 + [False])))
    rng = np.random.default_rng(5)
    x = scores(rng, (2, 3, 9))
    keep = rng.random((3, 9)) < 0.6
    want, hidden = reference(x, mask=np.where(keep, 0.0, -np.inf).astype(np.float32))
    assert_softmax(posenc.softmax(x, mask=keep.astype(np.int64)), "f32", want, hidden)


def test_integer_mask_other_values_and_ambiguous_shapes_refused():
    x = np.zeros((1, 2, 4), np.float32)
    with pytest.raises(ValueError, match=r"attention_mask.*holds -10000.*floating point"):
        posenc.softmax(x, mask=np.array([0, 0, -10000, 0]))
    with pytest.raises(TypeError, match="uint16"):
        posenc.softmax(x, mask=np.ones(4, np.uint16))
    # floating masks are added, whatever their values
    y = posenc.softmax(x, mask=np.array([1.0, 1.0, 1.0, 0.0]))
    e = np.exp([1.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(y[0, 0], e / e.sum(), rtol=1e-6)
    # HF's [batch, keys] padding mask next to 4-D scores: refused, with the way to pass it
    x4 = np.zeros((2, 1, 2, 4), np.float32)
    with pytest.raises(ValueError, match=r"mask\[:, None, None, :\]"):
        posenc.softmax(x4, mask=np.array([[1, 1, 1, 0], [1, 1, 0, 0]]))


def test_hf_4d_scores_and_masks(rng):
    """HF's eager attention: scores [B, H, q, k], masks [B, 1, q, k] (additive float, bool
    or HF's 0/1 integers); each batch element as the 3-D call with its own mask."""
    B, H, n_q, n_k = 3, 2, 4, 6
    x = scores(rng, (B, H, n_q, n_k))
    pad = np.ones((B, n_k), np.int64)
    pad[1, :2] = 0  # left padding of batch element 1
    pad[2, 4:] = 0
    causal = np.tril(np.ones((n_q, n_k), bool), k=n_k - n_q)
    keep = (pad[:, None, None, :] == 1) & causal  # [B, 1, q, k]
    additive = np.where(keep, 0.0, np.finfo(np.float32).min).astype(np.float32)
    for mask in (keep, keep.astype(np.int64), additive, pad[:, None, None, :]):
        y = posenc.softmax(x, mask=mask, scale=0.5)
        assert y.shape == x.shape
        m = np.asarray(mask)
        for b in range(B):
            mb = m[b, 0] if m.shape[2] == n_q else np.broadcast_to(m[b, 0], (n_q, n_k))
            values = (mb if mb.dtype == np.float32 else
                      np.where(mb.astype(bool), 0.0, -np.inf).astype(np.float32))
            want, hidden = reference(x[b], scale=0.5, mask=values)
            assert_softmax(y[b], "f32", want, hidden)
    # in place, a [B, H, q, k] mask, and a shared [q, k] one
    per_head = np.where(rng.random((B, H, n_q, n_k)) < 0.3, -np.inf, 0.0).astype(np.float32)
    z = x.copy()
    assert posenc.softmax(z, out=z, mask=per_head) is z
    for b in range(B):
        want, hidden = reference(x[b], mask=per_head[b])
        assert_softmax(z[b], "f32", want, hidden)
    shared = posenc.softmax(x, mask=causal)
    for b in range(B):
        np.testing.assert_array_equal(shared[b], posenc.softmax(x[b], mask=causal))
    with pytest.raises(ValueError, match="broadcast"):
        posenc.softmax(x, mask=np.zeros((2, 1, n_q, n_k), np.float32))
    with pytest.raises(ValueError, match="overlaps"):
        posenc.softmax(x, out=x[::-1])
