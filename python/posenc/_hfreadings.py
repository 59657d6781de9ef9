"""The length keys of the rope types, in the readings of transformers 4.x (as 4.49) and 5.x
(RopePlan.from_hf_config; where they differ: _hfparse's docstring). Each reader returns
(scaling dict, RopePlan.scaled keyword arguments, seq_dependent, seq_len_threshold,
aspects: (key, 4.x reading, 5.x reading) for each key this config's two readings differ on).
"""

import math
from collections.abc import Mapping

import numpy as np

from ._hfvalues import _MISSING, _count, _number, _one_value


def _get_mscale(scale, mscale=1.0):
    """transformers 5.x's yarn get_mscale."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


class _Lengths:
    """The length keys of one config and what the type readers share."""

    def __init__(self, src, d, where, opt, kind, model_type):
        self.src, self.d, self.where, self.opt, self.kind = src, d, where, opt, kind
        self.model_type = model_type
        max_pos = src.get("max_position_embeddings")
        self.max_pos = None if max_pos is _MISSING else _count("max_position_embeddings",
                                                                max_pos)
        dict_orig = opt("original_max_position_embeddings")
        if dict_orig is not _MISSING:
            dict_orig = _count("original_max_position_embeddings", dict_orig)
        self.dict_orig = dict_orig
        cfg_orig = src.get("original_max_position_embeddings")
        if cfg_orig is not _MISSING:
            cfg_orig = _count("original_max_position_embeddings", cfg_orig)
        self.cfg_orig = cfg_orig

    def need_max_pos(self, why):
        if self.max_pos is None:
            raise ValueError(f"rope type {self.kind!r} needs the config's max_position_embeddings "
                             f"({why})")
        return self.max_pos

    def pretraining_length_v5(self):
        """yarn, longrope, llama3 in 5.x (standardize_rope_params): the config level's
        original_max_position_embeddings, else the dict's, else max_position_embeddings."""
        orig = _one_value("original_max_position_embeddings", self.cfg_orig,
                          f"{self.src.where} (config level)", self.dict_orig, self.where)
        if orig is _MISSING:
            orig = self.need_max_pos("original_max_position_embeddings defaults to it")
        return orig

    def num(self, key):
        return _number(key, self.d[key])


def _no_lengths(c, reading):
    """default, linear: no length keys."""
    scaling = {"rope_type": c.kind}
    if c.kind == "linear":
        scaling["factor"] = c.num("factor")
    return scaling, {}, False, None, []


def _dynamic(c, reading):
    max_pos = c.need_max_pos("the length above which HF rescales")
    if c.dict_orig is not _MISSING and c.dict_orig != max_pos:
        raise ValueError(
            f"{c.where} has original_max_position_embeddings {c.dict_orig}, but HF's 'dynamic' "
            f"type does not read it: it rescales above max_position_embeddings {max_pos}; "
            "drop the key or make it equal")
    scaling = {"rope_type": "dynamic", "factor": c.num("factor")}
    return scaling, {"max_position_embeddings": max_pos}, True, max_pos, []


def _llama3(c, reading):
    scaling = {"rope_type": "llama3"}
    for key in ("factor", "low_freq_factor", "high_freq_factor"):
        scaling[key] = c.num(key)
    aspects = []
    v4 = c.dict_orig
    try:
        v5 = c.pretraining_length_v5()
    except ValueError as error:
        v5 = error
    if v4 != v5:
        aspects.append(("original_max_position_embeddings",
                        "refused (4.x requires it in rope_scaling)" if v4 is _MISSING else
                        f"rope_scaling's {v4} (the config level's is not read)",
                        f"refused ({v5})" if isinstance(v5, ValueError) else
                        f"{v5} (the config level's, else rope_scaling's, else "
                        "max_position_embeddings)"))
    if reading == "4":
        if v4 is _MISSING:
            raise ValueError(f"{c.where} lacks 'original_max_position_embeddings', which "
                             "transformers 4.x requires in rope_scaling for llama3 (5.x takes the "
                             "config level's or max_position_embeddings: transformers='5')")
        orig = v4
    else:
        orig = c.pretraining_length_v5()
    return scaling, {"original_max_position_embeddings": orig}, False, None, aspects


def _yarn(c, reading):
    opt = c.opt
    factor = opt("factor")
    factor = None if factor is _MISSING else _number("factor", factor)
    scaling = {"rope_type": "yarn"}
    for key in ("beta_fast", "beta_slow"):
        if opt(key) is not _MISSING:
            scaling[key] = c.num(key)
    given_att = None if opt("attention_factor") is _MISSING else c.num("attention_factor")
    mscales = [None if opt(k) is _MISSING else c.num(k) for k in ("mscale", "mscale_all_dim")]
    truncate = opt("truncate")
    if truncate is not _MISSING and not isinstance(truncate, (bool, np.bool_)):
        raise ValueError(f"truncate must be a bool, not {truncate!r}")
    max_pos = c.max_pos
    try:
        orig5 = c.pretraining_length_v5()
        error5 = None
    except ValueError as error:
        orig5, error5 = None, error
    factor5 = factor
    if factor is None and orig5 is not None:
        factor5 = c.need_max_pos("'factor' is None, so it is max_position_embeddings / "
                                 "original_max_position_embeddings") / orig5

    def att4():
        return given_att if given_att is not None else 0.1 * math.log(factor) + 1.0

    def att5():
        if given_att is not None:
            return given_att
        if mscales[0] and mscales[1]:
            return float(_get_mscale(factor5, mscales[0]) / _get_mscale(factor5, mscales[1]))
        return _get_mscale(factor5)

    aspects = []
    if factor is None:
        aspects.append(("factor", "refused (4.x requires a number)",
                        f"max_position_embeddings / original_max_position_embeddings = "
                        f"{factor5}" if factor5 is not None else f"refused ({error5})"))
    if error5 is None and max_pos is not None and orig5 != max_pos:
        aspects.append(("original_max_position_embeddings",
                        f"not read: the correction range is computed for "
                        f"max_position_embeddings = {max_pos}",
                        f"the correction range is computed for {orig5}"))
    if factor is not None and factor5 is not None and given_att is None and att4() != att5():
        key = "mscale, mscale_all_dim" if mscales[0] and mscales[1] else "factor"
        aspects.append((key, f"attention factor 0.1 ln(factor) + 1 = {att4()!r}",
                        f"attention factor {att5()!r}"))
    if truncate is not _MISSING and not truncate:
        aspects.append(("truncate", "not read: the correction range is rounded to integers",
                        "truncate False: the correction range is not rounded"))

    if reading == "4":
        if factor is None:
            raise ValueError(f"{c.where} has factor None, which transformers 4.x refuses (5.x "
                             "takes max_position_embeddings / original_max_position_embeddings: "
                             "pass transformers='5')")
        length = c.need_max_pos("transformers 4.x computes the correction range from it")
        scaling["factor"] = factor
        scaling["attention_factor"] = att4()
        kwargs = {"original_max_position_embeddings": length, "max_position_embeddings": length}
        return scaling, kwargs, False, None, aspects
    if error5 is not None:
        raise error5
    kwargs = {"original_max_position_embeddings": orig5}
    if factor is None:
        c.need_max_pos("'factor' is None, so it is max_position_embeddings / "
                       "original_max_position_embeddings")
    else:
        scaling["factor"] = factor
    if max_pos is not None:
        kwargs["max_position_embeddings"] = max_pos
    if given_att is not None:
        scaling["attention_factor"] = given_att
    for key, value in zip(("mscale", "mscale_all_dim"), mscales):
        if value is not None:
            scaling[key] = value
    if truncate is not _MISSING:
        scaling["truncate"] = bool(truncate)
    return scaling, kwargs, False, None, aspects


def _longrope(c, reading):
    opt, d = c.opt, c.d
    scaling = {"rope_type": "longrope"}
    factors = {}
    for key in ("short_factor", "long_factor"):
        value = d[key]
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__"):
            raise ValueError(f"{key} must be a list of numbers, not {value!r}")
        factors[key] = [_number(key, v) for v in value]
        scaling[key] = factors[key]
    given_att = None if opt("attention_factor") is _MISSING else c.num("attention_factor")
    if given_att is not None:
        scaling["attention_factor"] = given_att
    dict_factor = opt("factor")
    dict_factor = None if dict_factor is _MISSING else _number("factor", dict_factor)
    # Phi-3-small (its own modeling code, as vLLM and MLX read it): the attention factor of
    # the short factors is short_mscale, of the long ones long_mscale, each defaulting to the
    # type's own
    mscales = tuple(None if opt(key) is _MISSING else c.num(key)
                    for key in ("short_mscale", "long_mscale"))
    if mscales != (None, None):
        if given_att is not None:
            raise ValueError(f"{c.where} has attention_factor and short_mscale / long_mscale, "
                             "which give the attention factor twice; keep one")
        for key, value in zip(("short_mscale", "long_mscale"), mscales):
            if value is not None and value <= 0:
                raise ValueError(f"{key} must be > 0, not {value}")
        scaling["mscales"] = mscales
    differ = (factors["short_factor"] != factors["long_factor"]
              or (mscales != (None, None) and mscales[0] != mscales[1]))

    def v4():
        if c.cfg_orig is not _MISSING:
            orig = c.cfg_orig
            factor = c.need_max_pos("transformers 4.x derives the factor from it") / orig
        else:
            orig = c.need_max_pos("transformers 4.x takes it as the pretraining length")
            factor = dict_factor
        if factor is None and given_att is None and mscales == (None, None):
            raise ValueError(f"{c.where} has no factor, which transformers 4.x needs for the "
                             "attention factor (5.x takes max_position_embeddings / "
                             "original_max_position_embeddings: pass transformers='5')")
        switches = differ and c.model_type == "phi3"  # Phi3RotaryEmbedding only
        return orig, factor, switches

    def v5():
        orig = c.pretraining_length_v5()
        factor = dict_factor
        if factor is None:
            factor = c.need_max_pos("the attention factor uses max_position_embeddings / "
                                    "original_max_position_embeddings when 'factor' is "
                                    "absent") / orig
        return orig, factor, differ

    readings = {}
    for name, read in (("4", v4), ("5", v5)):
        try:
            readings[name] = read()
        except ValueError as error:
            readings[name] = error
    aspects = []
    r4, r5 = readings["4"], readings["5"]
    if c.model_type not in ("phi3small",) and (isinstance(r4, ValueError)
                                               or isinstance(r5, ValueError) or r4 != r5):
        def text(r, version):
            if isinstance(r, ValueError):
                return f"refused ({r})"
            orig, factor, switches = r
            return (f"pretraining length {orig}, factor {factor}, "
                    + (f"the long factors past {orig}" if switches else
                       "the short factors at every length"))
        keys = []
        if not isinstance(r4, ValueError) and not isinstance(r5, ValueError):
            if r4[0] != r5[0]:
                keys.append("original_max_position_embeddings")
            if r4[1] != r5[1] and given_att is None:
                keys.append("factor")
            if r4[2] != r5[2]:
                keys.append("long_factor")
        aspects.append((", ".join(keys) or "factor", text(r4, "4"), text(r5, "5")))
    if c.model_type == "phimoe" and reading == "4":
        raise ValueError("PhiMoE's rotary module of transformers 4.x switches the attention "
                         "factor (short_mscale / long_mscale) at rope_scaling's "
                         "original_max_position_embeddings but the factors only past "
                         "max_position_embeddings; posenc does not read that: pass "
                         "transformers='5'")
    chosen = readings["5" if reading in ("5", "own") else "4"]
    if isinstance(chosen, ValueError):
        raise chosen
    orig, factor, switches = chosen
    kwargs = {"original_max_position_embeddings": orig}
    if c.max_pos is not None:
        kwargs["max_position_embeddings"] = c.max_pos
    if factor is not None:
        scaling["factor"] = factor
    return scaling, kwargs, switches, orig if switches else None, aspects


_TYPE_READERS = {"dynamic": _dynamic, "llama3": _llama3, "yarn": _yarn, "longrope": _longrope}
