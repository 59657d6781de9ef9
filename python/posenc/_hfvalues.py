"""Reading values from HF configs (objects or dicts): absent, numbers, counts, one value
given in two places (RopePlan.from_hf_config)."""

import math
import numbers
import operator
from collections.abc import Mapping

import numpy as np

from . import _hffamily

_MISSING = object()


class _Source:
    """Key access to a config object (attributes) or a dict (items); None reads as absent,
    as HF treats an unset optional field."""

    def __init__(self, config, where):
        self.config = config
        self.where = where
        self.is_dict = isinstance(config, Mapping)

    def get(self, key):
        if self.is_dict:
            value = self.config.get(key, _MISSING)
        else:
            value = getattr(self.config, key, _MISSING)
        return _MISSING if value is None else value

    def family(self, key):
        """get(key), or for a dict without the key at all, the default its model_type's
        config class fills in (_hffamily.FAMILY_DEFAULTS), else _MISSING."""
        value = self.get(key)
        if value is _MISSING and self.is_dict and key not in self.config:
            model_type = self.config.get("model_type")
            if isinstance(model_type, str):
                value = _hffamily.FAMILY_DEFAULTS.get(model_type, {}).get(key, _MISSING)
        return value


def _number(name, value):
    """A finite real number given in a config (int or float, not bool or str) as float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, not {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, not {value!r}")
    return value


def _count(name, value, minimum=1):
    """An integer >= minimum given in a config (a positive one by default)."""
    what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be {what}, not {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be {what}, not {value!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be {what}, not {value}")
    return value


def _same(a, b):
    """Whether two config values agree (numbers by value, sequences element-wise)."""
    if isinstance(a, (list, tuple, np.ndarray)) or isinstance(b, (list, tuple, np.ndarray)):
        try:
            return bool(np.array_equal(np.asarray(a), np.asarray(b)))
        except Exception:  # ragged or non-numeric: compare as Python values
            return list(a) == list(b)
    try:
        return bool(a == b)
    except Exception:
        return False


def _one_value(name, first, first_where, second, second_where):
    """The value of a key given in up to two places; ValueError when both give it and they
    differ. _MISSING when neither does."""
    if first is _MISSING:
        return second
    if second is not _MISSING and not _same(first, second):
        raise ValueError(f"{name} is {first!r} in {first_where} but {second!r} in {second_where}; "
                         "give it once, or the same in both")
    return first


