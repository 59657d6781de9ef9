"""The package's flags and constants are include/posenc.h's (issue 26): python/posenc/
_constants.py is what python/tools/gen_constants.py makes of the header, the header's flags
are each parsed here on their own and found in the package with the same value, and the
deterministic modes (POSENC_ROPE_DETERMINISTIC, POSENC_SINUSOID_DETERMINISTIC), which the
Python package could not reach when it copied flag values by hand, reach the C library:
every ISA gives bitwise the same result with them.
"""

import re
import runpy
from pathlib import Path

import numpy as np
import pytest

import posenc
from posenc import _constants, _lib

from draws import normal_f32

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "include" / "posenc.h"
GENERATOR = ROOT / "python" / "tools" / "gen_constants.py"


@pytest.fixture(scope="module")
def header():
    if not HEADER.is_file() or not GENERATOR.is_file():
        pytest.skip(f"no {HEADER} / {GENERATOR}: tests run outside the repository")
    return HEADER.read_text()


def test_constants_module_is_generated_from_the_header(header):
    generator = runpy.run_path(str(GENERATOR))
    text = generator["render"](generator["python_constants"](header))
    assert Path(_constants.__file__).read_text() == text, (
        "python/posenc/_constants.py is not include/posenc.h's: run python/tools/gen_constants.py")


def test_every_flag_of_the_header_is_the_packages(header):
    """An independent reading: each `POSENC_<GROUP>_<NAME> = <n>u` of the header's flag
    enums (and the statuses and storage types) is _constants' value; none is missing."""
    body = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    pattern = (r"\b(POSENC_(?:ROPE|SINUSOID|ALIBI|SOFTMAX|DTYPE|ERR)_\w+|POSENC_OK)\s*=\s*"
               r"(\d+)u?(?:\s*<<\s*(\d+))?")
    flags = {name: int(value) << int(shift or 0)
             for name, value, shift in re.findall(pattern, body)}
    assert {"POSENC_ROPE_DETERMINISTIC", "POSENC_SINUSOID_DETERMINISTIC", "POSENC_ROPE_GPTJ",
            "POSENC_SOFTMAX_MASK_SLOPE", "POSENC_DTYPE_F16"} <= set(flags)
    for name, value in flags.items():
        assert getattr(_constants, name) == value, name
    # the short names the package uses are those values
    assert _lib.ROPE_DETERMINISTIC == flags["POSENC_ROPE_DETERMINISTIC"]
    assert _lib.SINUSOID_DETERMINISTIC == flags["POSENC_SINUSOID_DETERMINISTIC"]
    assert _lib.ROPE_GPTJ == flags["POSENC_ROPE_GPTJ"]
    assert _lib.SOFTMAX_MASK_SLOPE == flags["POSENC_SOFTMAX_MASK_SLOPE"]


def _every_isa(call):
    """call() run with each available ISA active: {isa: result bits}."""
    former = posenc.active_isa()
    try:
        out = {}
        for isa in posenc.available_isas():
            posenc.set_isa(isa)
            out[isa] = np.ascontiguousarray(call()).view(np.uint8).copy()
        return out
    finally:
        posenc.set_isa(former)


def assert_all_equal(results):
    first = next(iter(results.values()))
    for isa, bits in results.items():
        assert np.array_equal(bits, first), f"{isa} differs"


def test_deterministic_modes_reach_the_library():
    rng = np.random.default_rng(3)
    plan = posenc.RopePlan(96, 500000.0)
    x = normal_f32(rng, (2, 37, 3, 128), 3.0)
    pos = rng.integers(0, 2 ** 30, (2, 37))

    def rotated(**kw):
        return posenc.rope_out(plan, x, positions=pos, axes="BLHD", **kw)

    assert_all_equal(_every_isa(lambda: rotated(deterministic=True)))
    assert_all_equal(_every_isa(lambda: rotated(deterministic=True, f32_angles=True,
                                                layout="gptj", inverse=True)))
    q = x[0].copy()

    def in_place():
        y = q.copy()
        posenc.rope(plan, y, positions=pos[0], deterministic=True)
        return y

    assert_all_equal(_every_isa(in_place))
    assert np.array_equal(in_place(), rotated(deterministic=True)[0])
    factors = posenc.rope_factors(plan, positions=pos, deterministic=True)
    assert factors.deterministic and not posenc.rope_factors(plan, positions=pos).deterministic
    assert_all_equal(_every_isa(lambda: posenc.rope_apply(factors, x, axes="BLHD")))
    splan = posenc.SinusoidPlan(200)
    rows = rng.integers(0, 2 ** 30, 50)
    assert_all_equal(_every_isa(lambda: posenc.sinusoid_fill(splan, rows, deterministic=True)))
    h = normal_f32(rng, (50, 200))

    def added():
        y = h.copy()
        posenc.sinusoid_add(splan, y, positions=rows, deterministic=True)
        return y

    assert_all_equal(_every_isa(added))
    times = np.array([0.5, 999.25, 12345.5], np.float32)
    assert_all_equal(_every_isa(lambda: posenc.sinusoid_fill_timesteps(
        splan, times, deterministic=True)))


def test_deterministic_is_the_flag_not_a_no_op():
    """The flag changes the computation: against the default on an ISA whose variant differs
    from the scalar one somewhere (skipped when every ISA already agrees bitwise here)."""
    rng = np.random.default_rng(4)
    plan = posenc.RopePlan(128, 10000.0)
    x = normal_f32(rng, (1, 64, 4, 128), 3.0)
    pos = rng.integers(0, 2 ** 30, (1, 64))
    plain = _every_isa(lambda: posenc.rope_out(plan, x, positions=pos, axes="BLHD"))
    if len({bits.tobytes() for bits in plain.values()}) == 1:
        pytest.skip("every ISA here already gives the same bits without the flag")
    det = _every_isa(lambda: posenc.rope_out(plan, x, positions=pos, axes="BLHD",
                                             deterministic=True))
    assert_all_equal(det)
