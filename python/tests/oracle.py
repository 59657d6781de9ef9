"""An independent NumPy oracle: the seeds' formulas (/work/shared/seeds, DESIGN.md) in
float64, with angles from the exact product position * frequency.

Angles: the library promises cos/sin of the exact real product p * w (w a double, |p| up to
2^31). A double product is off by up to 2.4e-7 rad near 2^31 (half an ulp of 2^31), as much as
the bound under test, so the product is formed in long double (64-bit or wider significand on
x86-64 and aarch64 Linux: error <= 2^31 * 2^-64 ~ 1e-10) and long double cos/sin reduce it.
"""

import numpy as np

LONG = np.longdouble
if np.finfo(LONG).nmant < 63:  # e.g. a platform whose long double is double
    raise ImportError("the oracle needs a long double with a 64-bit significand")


def exact_cos_sin(positions, freqs):
    """cos and sin (float64, [n, m]) of the exact products positions[r] * freqs[i]."""
    angle = np.asarray(positions).astype(LONG)[:, None] * np.asarray(freqs, LONG)[None, :]
    return np.cos(angle).astype(np.float64), np.sin(angle).astype(np.float64)


def f32_cos_sin(positions, freqs):
    """cos and sin of the float32 recipe's angle: fl32(fl32(p) * fl32(w)), in float64."""
    angle = (np.asarray(positions).astype(np.float32)[:, None]
             * np.asarray(freqs).astype(np.float32)[None, :])  # one float32 rounding
    angle = angle.astype(np.float64)
    return np.cos(angle), np.sin(angle)


def cos_sin(positions, freqs, f32_angles):
    return (f32_cos_sin if f32_angles else exact_cos_sin)(positions, freqs)


def default_freqs(rotary_dim, base):
    """w_i = base^(-2i/R) in float64, as seed 000 writes it (1 / base^(2i/R))."""
    return 1.0 / (base ** (np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim))


def seed_div_term(d_model, base=10000.0):
    """Seed 000/004 sinusoid frequencies, exp(2i * -(ln(base) / d)), in float64."""
    return np.exp(np.arange(0, d_model, 2, dtype=np.float64) * -(np.log(base) / d_model))


# --- RoPE -----------------------------------------------------------------------------------

def pair_indices(rotary_dim, layout):
    """(first, second) element of each pair: NEOX (x[i], x[i + R/2]), GPTJ (x[2i], x[2i+1])."""
    half = rotary_dim // 2
    if layout == "neox":
        return np.arange(half), np.arange(half) + half
    return np.arange(0, rotary_dim, 2), np.arange(1, rotary_dim, 2)


def rope(x, cos, sin, rotary_dim, layout, inverse=False, att=1.0):
    """The header's rotation of x [L, H, D] (any float) with cos/sin [L, R/2], in float64:
    u' = u c - v s, v' = v c + u s (s -> -s for inverse), c = att cos, s = att sin. Also
    returns |u| + |v| of each element's pair (0 outside the rotary part), for tolerances."""
    x = np.asarray(x, np.float64)
    first, second = pair_indices(rotary_dim, layout)
    c = att * cos[:, None, :]
    s = att * sin[:, None, :] * (-1.0 if inverse else 1.0)
    u, v = x[..., first], x[..., second]
    out = x.copy()
    out[..., first] = u * c - v * s
    out[..., second] = v * c + u * s
    magnitude = np.zeros_like(x)
    magnitude[..., first] = magnitude[..., second] = np.abs(u) + np.abs(v)
    return out, magnitude


def _rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def seed000_apply_rope(x, cos_half, sin_half):
    """Seed 000 RotaryEmbedding.apply_rope on x [B, H, L, D]: x*cos + rotate_half(x)*sin with
    cos = concat(freqs, freqs) angles; cos_half/sin_half [L, D/2] for the positions used."""
    cos = np.concatenate([cos_half, cos_half], axis=-1)[None, None]
    sin = np.concatenate([sin_half, sin_half], axis=-1)[None, None]
    return x * cos + _rotate_half(x) * sin


def seed000_backward_rope(grad, cos_half, sin_half):
    """Seed 000 RotaryEmbedding.backward_rope: grad*cos - rotate_half(grad)*sin."""
    cos = np.concatenate([cos_half, cos_half], axis=-1)[None, None]
    sin = np.concatenate([sin_half, sin_half], axis=-1)[None, None]
    return grad * cos - _rotate_half(grad) * sin


def seed003_apply_rope(q, k, cos, sin):
    """Seed 003 apply_rope: interleaved pairs, returned de-interleaved (all rotated first
    members, then all second members)."""
    q_even, q_odd = q[..., 0::2], q[..., 1::2]
    k_even, k_odd = k[..., 0::2], k[..., 1::2]
    q_rot = np.concatenate([q_even * cos - q_odd * sin, q_even * sin + q_odd * cos], axis=-1)
    k_rot = np.concatenate([k_even * cos - k_odd * sin, k_even * sin + k_odd * cos], axis=-1)
    return q_rot, k_rot


def seed004_apply_rotary_pos_emb(q, k, cos_half, sin_half):
    """Seed 004 RotaryPositionalEmbedding.apply_rotary_pos_emb on [B, H, L, D], positions
    0..L-1: q*cos + rotate_half(q)*sin, the same for k."""
    cos = np.concatenate([cos_half, cos_half], axis=-1)[None, None]
    sin = np.concatenate([sin_half, sin_half], axis=-1)[None, None]
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


# --- sinusoidal -----------------------------------------------------------------------------

def sinusoid_table(positions, freqs, dim, layout="interleaved", f32_angles=False):
    """Rows PE(p): sin(p w_i) for pair i < ceil(d/2), cos(p w_i) for i < floor(d/2), placed
    as the header's layouts say (interleaved: seed 000's pe[:, 0::2] = sin, pe[:, 1::2] =
    cos; an odd d ends with a sin column)."""
    cos, sin = cos_sin(positions, freqs, f32_angles)
    n_sin, n_cos = (dim + 1) // 2, dim // 2
    table = np.empty((len(positions), dim))
    if layout == "interleaved":
        table[:, 0::2] = sin[:, :n_sin]
        table[:, 1::2] = cos[:, :n_cos]
    elif layout == "sin_cos":
        table[:, :n_sin] = sin[:, :n_sin]
        table[:, n_sin:] = cos[:, :n_cos]
    else:  # cos_sin
        table[:, :n_cos] = cos[:, :n_cos]
        table[:, n_cos:] = sin[:, :n_sin]
    return table


def seed000_sinusoidal_forward(seq_len, offset, d_model, base=10000.0):
    """Seed 000 SinusoidalEmbedding(max_seq_len, d_model).forward(seq_len, offset), float64."""
    position = np.arange(offset, offset + seq_len)
    div_term = seed_div_term(d_model, base)
    cos, sin = exact_cos_sin(position, div_term)
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2] = sin
    pe[:, 1::2] = cos
    return pe


def seed003_apply_sinusoidal(embeddings, pos_encodings):
    seq_len = embeddings.shape[0]
    return embeddings + pos_encodings[:seq_len]


def seed004_sinusoidal_forward(x, d_model):
    """Seed 004 SinusoidalPositionalEncoding.forward without dropout: x [B, L, D] + pe."""
    pe = seed000_sinusoidal_forward(x.shape[1], 0, d_model)
    return x + pe[None]


# --- ALiBi ----------------------------------------------------------------------------------

def seed000_get_slopes(n):
    """Seed 000 ALiBiEmbedding._get_slopes, verbatim (Python floats, then float32)."""
    def get_slopes_power_of_2(n_heads):
        start = (2 ** (-2 ** -(np.log2(n_heads) - 3)))
        ratio = start
        return [start * (ratio ** i) for i in range(n_heads)]

    if np.log2(n).is_integer():
        slopes = get_slopes_power_of_2(n)
    else:
        closest_power_of_2 = 2 ** int(np.floor(np.log2(n)))
        slopes = (get_slopes_power_of_2(closest_power_of_2)
                  + get_slopes_power_of_2(2 * closest_power_of_2)[0::2][: n - closest_power_of_2])
    return np.array(slopes, dtype=np.float32)


def slopes_float64(n, max_bias):
    """The header's slopes in float64: 2^(-max_bias (h+1) / n) for a power of two n; else the
    c = 2^floor(log2 n) slopes of c heads, then the odd-indexed 2^(-max_bias (2k+1) / (2c))."""
    c = 1 << (n.bit_length() - 1)
    slopes = list(np.exp2(-max_bias * np.arange(1, c + 1) / c))
    slopes += list(np.exp2(-max_bias * (2 * np.arange(n - c) + 1) / (2 * c)))
    return np.array(slopes)


def seed000_get_bias(slopes, seq_len):
    """Seed 000 ALiBiEmbedding.get_bias: -(slopes * |i - j|), (1, H, L, L); float32 slopes
    times an int64 distance is float64 in NumPy, as in the seed."""
    positions = np.arange(seq_len)
    distance = np.abs(positions[np.newaxis, :] - positions[:, np.newaxis])
    alibi_bias = -(slopes[:, np.newaxis, np.newaxis] * distance[np.newaxis, :, :])
    return alibi_bias[np.newaxis]


def alibi_bias_f32(slopes, n_q, n_k, q_offset, causal):
    """The header's float recipe: b = -(m_h * (float)|qpos - j|), one float32 rounding;
    -inf where j > qpos if causal."""
    qpos = q_offset + np.arange(n_q, dtype=np.int64)[:, None]
    distance = np.abs(qpos - np.arange(n_k, dtype=np.int64)[None, :]).astype(np.float32)
    bias = -(np.asarray(slopes, np.float32)[:, None, None] * distance[None])
    if causal:
        bias = np.where((np.arange(n_k)[None, :] > qpos)[None], np.float32(-np.inf), bias)
    return bias.astype(np.float32)


def alibi_add_f32(scores, slopes, q_offset, scale, causal):
    """The header's S = (scale * S) - m_h * |qpos - j| (scale 1: S - m_h |qpos - j|), each
    operation rounded to float32; -inf where j > qpos if causal."""
    scores = np.asarray(scores, np.float32)
    n_q, n_k = scores.shape[1:]
    qpos = q_offset + np.arange(n_q, dtype=np.int64)[:, None]
    distance = np.abs(qpos - np.arange(n_k, dtype=np.int64)[None, :]).astype(np.float32)
    product = np.asarray(slopes, np.float32)[:, None, None] * distance[None]
    scaled = scores if scale == 1.0 else np.float32(scale) * scores
    out = scaled - product
    if causal:
        out = np.where((np.arange(n_k)[None, :] > qpos)[None], np.float32(-np.inf), out)
    return out.astype(np.float32)


def seed003_apply_alibi(attention_scores, alibi_bias):
    return attention_scores + alibi_bias


# --- learned --------------------------------------------------------------------------------

def seed003_apply_learned(embeddings, pos_embeddings):
    seq_len = embeddings.shape[0]
    return embeddings + pos_embeddings[:seq_len]
