"""Hypothesis strategies shared by the tests."""

import numpy as np
from hypothesis import strategies as st

INT32_MAX = 2 ** 31 - 1
# The accuracy contract covers |p| < 2^31, so -2^31 itself is left out.
P_MIN, P_MAX = -INT32_MAX, INT32_MAX

# Mostly short runs; sometimes more than 256 tokens, where the SIMD variants step cos/sin
# from one position to the next and re-anchor every 256 tokens.
token_counts = st.one_of(st.integers(0, 24), st.integers(0, 24), st.integers(250, 560))


@st.composite
def positions(draw, n):
    """(positions array or None, start_pos, the positions as int64) for n tokens: a start
    position (small, or anywhere with the run ending by INT32_MAX), or explicit positions
    (small, anywhere in int32, or a run near either end of the range)."""
    kind = draw(st.sampled_from(["start_small", "start_any", "array_small", "array_any",
                                 "array_run"]))
    if kind == "start_small":
        start = draw(st.integers(-3000, 3000))
    elif kind == "start_any":
        start = draw(st.one_of(st.integers(P_MIN, P_MAX - max(n - 1, 0)),
                               st.just(P_MAX - max(n - 1, 0))))
    else:
        seed = draw(st.integers(0, 2 ** 32 - 1))
        rng = np.random.default_rng(seed)
        if kind == "array_small":
            array = rng.integers(-3000, 3000, n)
        elif kind == "array_any":
            array = rng.integers(P_MIN, P_MAX, n, endpoint=True)
        else:
            first = draw(st.sampled_from([P_MAX - n + 1, P_MIN, 100000]))
            array = first + np.arange(n)
        return array.astype(np.int32), 0, array.astype(np.int64)
    return None, start, start + np.arange(n, dtype=np.int64)


seeds = st.integers(0, 2 ** 32 - 1)


def normal_f32(rng, shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)
