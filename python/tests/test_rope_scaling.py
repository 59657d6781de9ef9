"""Scaled RoPE plans (RopePlan.scaled, posenc_rope_plan_create_scaled) from HF rope_scaling
dicts: the configurations of tests/data/hf_rope_golden.txt (frequencies computed by HF
transformers itself, tests/data/hf_rope_golden.py) to 1e-14, the types posenc adds, and errors."""

from pathlib import Path

import numpy as np
import posenc
import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "data" / "hf_rope_golden.txt"


def golden_cases():
    """(name, rotary_dim, base, rope_scaling dict, config kwargs, HF inv_freq, HF att)."""
    cases, case = [], None
    for line in GOLDEN.read_text().splitlines():
        key, *rest = line.split()
        if key == "case":
            case = {"name": rest[0], "dict": {}, "config": {}}
        elif case is None:
            continue
        elif key == "rope_type":
            case["dict"]["rope_type"] = rest[0]
        elif key in ("rotary_dim", "seq_len"):
            case[key] = int(rest[0])
        elif key in ("base", "attention_factor"):
            case[key] = float.fromhex(rest[0])
        elif key == "param":
            value = float.fromhex(rest[1])
            if rest[0] == "max_position_embeddings":
                case["config"]["max_position_embeddings"] = int(value)
            elif rest[0] == "original_max_position_embeddings":
                case["config"]["original_max_position_embeddings"] = int(value)
            else:
                case["dict"][rest[0]] = value
        elif key == "list":
            case["dict"][rest[0]] = [float.fromhex(x) for x in rest[2:]]
        elif key == "inv_freq_f64":
            case["inv_freq"] = np.array([float.fromhex(x) for x in rest[1:]])
        elif key == "end":
            cases.append(case)
            case = None
    return cases


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: c["name"])
def test_scaled_plans_match_hf(case):
    # scaled() takes the rotary_dim itself: a partial_rotary_factor (a 5.x rope_parameters
    # key) other than 1 is refused rather than ignored; from_hf_config reads it.
    scaling = dict(case["dict"])
    if scaling.pop("partial_rotary_factor", 1.0) != 1.0:
        with pytest.raises(ValueError, match="partial_rotary_factor"):
            posenc.RopePlan.scaled(case["rotary_dim"], case["base"], case["dict"],
                                   seq_len=case["seq_len"], **case["config"])
    plan = posenc.RopePlan.scaled(case["rotary_dim"], case["base"], scaling,
                                  seq_len=case["seq_len"], **case["config"])
    rel = np.abs(plan.freqs - case["inv_freq"]) / case["inv_freq"]
    assert rel.max() <= 1e-14
    assert plan.attention_factor == pytest.approx(case["attention_factor"], rel=1e-15)


def test_hf_dict_spellings():
    """A config.json's dict as is: old "type" key, rope_theta inside, "truncate": False."""
    yarn = {"type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
            "original_max_position_embeddings": 4096, "rope_theta": 150000,
            "truncate": False}
    plan = posenc.RopePlan.scaled(64, 150000.0, yarn)
    with pytest.raises(ValueError, match="rope_theta"):  # base 10000 contradicts the dict
        posenc.RopePlan.scaled(64, rope_scaling=yarn)
    assert plan.attention_factor == pytest.approx(0.1 * np.log(32.0) + 1)
    truncated = posenc.RopePlan.scaled(64, 150000.0, {**yarn, "truncate": True})
    assert not np.array_equal(plan.freqs, truncated.freqs)
    assert np.array_equal(posenc.RopePlan.scaled(64, 10000.0).freqs, posenc.RopePlan(64).freqs)


def test_posenc_types():
    w = posenc.RopePlan(16).freqs
    factors = np.arange(1.0, 9.0)
    pairs = posenc.RopePlan.scaled(16, 10000.0, {"rope_type": "pair_factors",
                                                 "pair_factors": factors})
    np.testing.assert_array_equal(pairs.freqs, w / factors)
    alpha = posenc.RopePlan.scaled(16, 10000.0, {"rope_type": "ntk_alpha", "alpha": 4.0})
    np.testing.assert_allclose(alpha.freqs, posenc.RopePlan(16, 10000.0 * 4.0 ** (16 / 14)).freqs,
                               rtol=1e-14)


def test_errors():
    with pytest.raises(ValueError, match="unknown rope_type"):
        posenc.RopePlan.scaled(64, 10000.0, {"rope_type": "xpos"})
    with pytest.raises(ValueError, match="unknown rope_scaling key"):
        posenc.RopePlan.scaled(64, 10000.0, {"rope_type": "linear", "factr": 2.0})
    for bad in ({"rope_type": "linear", "factor": 0.0},
                {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                 "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
                {"rope_type": "longrope", "short_factor": [1.0] * 31, "long_factor": [1.0] * 32,
                 "original_max_position_embeddings": 4096, "factor": 2.0},
                {"rope_type": "yarn", "factor": float("nan"),
                 "original_max_position_embeddings": 4096}):
        with pytest.raises(posenc.PosencError, match="invalid argument") as error:
            posenc.RopePlan.scaled(64, 10000.0, bad)
        assert error.value.status == 1
