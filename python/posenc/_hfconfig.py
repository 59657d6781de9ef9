"""RoPE plans from HuggingFace transformers model configs (RopePlan.from_hf_config).

plan_from_hf_config reads the rotary-embedding keys of a transformers config, in the layout
of transformers 4.x (``rope_theta``, ``rope_scaling``, ``partial_rotary_factor``, ``head_dim``,
``max_position_embeddings``, Phi-3's config-level ``original_max_position_embeddings``) or of
transformers 5.x (one ``rope_parameters`` dict holding ``rope_type``, ``rope_theta``,
``partial_rotary_factor`` and the type's keys), and builds the double-precision plan of
RopePlan.scaled (posenc_rope_plan_create_scaled) with the frequencies and attention factor
HF's ``ROPE_INIT_FUNCTIONS[rope_type]`` computes. HF evaluates its formulas in float32; the
plan holds their float64 values (HF's own code run in float64 gives the same to 1e-14), which
HF's float32 inv_freq approximates to its own rounding: a few float32 ulp, more for large
rope_theta and Llama 3's smoothing (HF rounds the exponent 2i/R to float32). For HF's float32
frequencies bit for bit, see RopePlan.hf_f32.

Every key is read or refused: a key the rope type does not take, a key no type takes, and
two places giving one value differently are ValueErrors naming the key, never ignored.

Sequence-dependent types. HF's rotary module recomputes its frequencies in ``forward`` from
``seq_len = max(position_ids) + 1``:
  - "dynamic": a length above ``max_position_embeddings`` recomputes with that length
    (dynamic NTK); a length at or below it uses the initial frequencies (the default plan).
  - "longrope": a length above ``original_max_position_embeddings`` uses ``long_factor``, one
    at or below it ``short_factor``; the attention factor is the same for both, except with
    Phi-3-small's ``short_mscale`` / ``long_mscale`` (read as its own modeling code, vLLM and
    MLX read them: each set's attention factor; HF's Phi3 code does not know them).
The plan returned carries ``plan.hf`` (HfRope), whose ``for_seq_len(seq_len)`` gives the plan
for one such call, and ``resolve_plan(plan, max_position)`` picks it for a kernel call.
(HF's dynamic module is also stateful: after growing to a length it keeps those frequencies
for later calls that are shorter but still above max_position_embeddings; for_seq_len is
stateless and gives what a fresh module, or a growing sequence, uses.)
"""

import collections
import math
import numbers
import operator
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["HfRope", "plan_from_hf_config", "resolve_plan", "HF_ROPE_TYPES"]

#: The rope types read (HF's ROPE_INIT_FUNCTIONS of transformers 4.x), plus the legacy
#: names HF maps onto them: "su" (LongRoPE's first name) and "mrope" (Qwen2-VL's name for
#: the default frequencies with an mrope_section).
HF_ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3")
_ALIASES = {"su": "longrope", "mrope": "default"}

# Keys every rope dict may hold: the type itself (legacy "type" and "rope_type"), the
# transformers 5.x copies of rope_theta and partial_rotary_factor, and the multimodal-RoPE
# keys that HF models keep in the dict and pass over in validation (ignore_keys).
_COMMON_KEYS = frozenset({"rope_type", "type", "rope_theta", "partial_rotary_factor",
                          "mrope_section", "mrope_interleaved"})

# (required, optional) keys per type: HF's validation (_check_received_keys's required and
# optional sets, modeling_rope_utils.py) of transformers 4.49 joined with those of 5.x, which
# adds original_max_position_embeddings (filled from the config when absent), mscale,
# mscale_all_dim and truncate to "yarn".
_TYPE_KEYS = {
    "default": (frozenset(), frozenset()),
    "linear": (frozenset({"factor"}), frozenset()),
    "dynamic": (frozenset({"factor"}), frozenset({"original_max_position_embeddings"})),
    "yarn": (frozenset({"factor"}),
             frozenset({"attention_factor", "beta_fast", "beta_slow",
                        "original_max_position_embeddings", "mscale", "mscale_all_dim",
                        "truncate"})),
    "longrope": (frozenset({"short_factor", "long_factor"}),
                 frozenset({"attention_factor", "factor", "original_max_position_embeddings",
                            "short_mscale", "long_mscale"})),
    "llama3": (frozenset({"factor", "low_freq_factor", "high_freq_factor"}),
               frozenset({"original_max_position_embeddings"})),
}

# Plans kept per HfRope for "dynamic" lengths above the threshold (most recently used).
_DYNAMIC_CACHE_SIZE = 8

_MISSING = object()


# --- reading values -----------------------------------------------------------------------

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


def _select(config):
    """The config holding the text model's rope keys: the config itself, or its text_config
    for a composite (vision-language) config whose top level has no rope keys."""
    if config is None or isinstance(config, (str, bytes, numbers.Number)):
        raise TypeError("config must be a transformers PretrainedConfig or a dict, "
                        f"not {type(config).__name__}")
    top = _Source(config, "the config")
    keys = ("rope_scaling", "rope_parameters", "rope_theta")
    if any(top.get(k) is not _MISSING for k in keys):
        return top
    text = top.get("text_config")
    if text is not _MISSING and not isinstance(text, (str, bytes, numbers.Number)):
        inner = _Source(text, "the text_config")
        if any(inner.get(k) is not _MISSING for k in keys):
            return inner
    return top


def _rope_dict(src):
    """The rope dict: rope_scaling (4.x) and rope_parameters (5.x) merged, every key given in
    both having one value."""
    merged = {}
    names = {}
    for name in ("rope_scaling", "rope_parameters"):
        d = src.get(name)
        if d is _MISSING:
            continue
        if not isinstance(d, Mapping):
            raise ValueError(f"{name} must be a dict, not {type(d).__name__}")
        if d and all(isinstance(v, Mapping) for v in d.values()):
            raise ValueError(
                f"{name} holds one dict per layer type ({', '.join(map(repr, d))}); "
                "build a plan from each layer type's dict")
        for key, value in d.items():
            if key in merged and not _same(merged[key], value):
                raise ValueError(f"{key!r} is {merged[key]!r} in {names[key]} but {value!r} "
                                 f"in {name}")
            merged.setdefault(key, value)
            names.setdefault(key, name)
    return merged, (" and ".join(sorted(set(names.values()), reverse=True)) or "rope_scaling")


def _rope_type(d, src, where):
    """The HF rope type named by "rope_type" and/or the legacy "type" (HF's own copy of one
    in the other is fine; different types are not), aliases resolved."""
    legacy = d.get("type")
    if legacy is not None and src.get("model_type") == "phi3" and legacy in ("su", "yarn"):
        legacy = "longrope"  # Phi3Config._rope_scaling_adjustment (transformers 4.x)
    named = d.get("rope_type")
    for key, value in (("rope_type", named), ("type", legacy)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where} {key!r} must be a string, not {value!r}")
    if named is not None and legacy is not None and \
            _ALIASES.get(named, named) != _ALIASES.get(legacy, legacy):
        raise ValueError(f"{where} has 'rope_type' {named!r} and 'type' {d.get('type')!r}, "
                         "which name different rope types")
    kind = named if named is not None else legacy if legacy is not None else "default"
    mrope = "mrope" in (named, legacy)
    kind = _ALIASES.get(kind, kind)
    if kind not in _TYPE_KEYS:
        raise ValueError(f"{where} names rope type {kind!r}, which is not a HuggingFace rope type "
                         f"posenc reads ({', '.join(HF_ROPE_TYPES)}, or the legacy 'su', "
                         "'mrope')")
    return kind, mrope


# --- the result ---------------------------------------------------------------------------

@dataclass(frozen=True)
class HfRope:
    """What a HF config says about its RoPE, attached to plans as ``plan.hf``.

    rope_type: the HF type ("default", "linear", "dynamic", "yarn", "longrope", "llama3";
    legacy names resolved). head_dim: the attention head size. rotary_dim: the rotated part,
    int(head_dim * partial_rotary_factor). base: rope_theta. mrope_section: the three pair
    counts of multimodal RoPE (sum rotary_dim / 2; for posenc.mrope) or None.
    mrope_interleaved: the Qwen3-VL interleaved pair assignment. seq_dependent: whether the
    frequencies HF uses depend on the sequence length ("dynamic"; "longrope" whose short and
    long factors differ). seq_len_threshold: for those, the largest seq_len that uses the
    initial frequencies (max_position_embeddings for "dynamic",
    original_max_position_embeddings for "longrope"), else None. seq_len: the sequence length
    the plan carrying this record was made for (None: HF's initial frequencies, made without
    a length). pinned: the plan was made by from_hf_config with an explicit seq_len, which
    fixes its frequencies: resolve_plan returns it as it is.
    """

    rope_type: str
    head_dim: int
    rotary_dim: int
    base: float
    mrope_section: tuple = None
    mrope_interleaved: bool = False
    seq_dependent: bool = False
    seq_len_threshold: int = None
    seq_len: int = None
    pinned: bool = False
    _maker: object = field(default=None, repr=False, compare=False)

    def for_seq_len(self, seq_len):
        """The plan HF uses for a forward call whose max(position_ids) + 1 is seq_len.

        "dynamic": seq_len > max_position_embeddings gives the dynamic-NTK plan for seq_len,
        anything else the initial (default) plan. "longrope": seq_len >
        original_max_position_embeddings gives the long-factor plan, anything else the
        short-factor plan. Other types: the one plan. seq_len None: the initial plan.
        Plans are cached (the initial one, the long-factor one, and the last 8 dynamic
        lengths), so repeated calls return the same object. HF's dynamic module also keeps
        frequencies it grew to for later, shorter calls still above the threshold; this
        function gives the frequencies for seq_len itself (what HF computes when lengths
        grow, as in generation, or on a fresh module).
        """
        if self._maker is None:
            raise ValueError("this HfRope is not attached to a plan maker")
        return self._maker.plan(seq_len)


class _PlanMaker:
    """Builds and caches the plans of one parsed config (thread-safe)."""

    def __init__(self, cls, info, scaling, kwargs, f32=False):
        self._cls = cls
        self._f32 = f32
        self._info = info  # HfRope without maker and seq_len
        self._scaling = scaling
        self._kwargs = kwargs
        self._lock = threading.Lock()
        self._initial = None
        self._long = None
        self._dynamic = collections.OrderedDict()

    def _make(self, seq_len, pinned=False):
        make = self._cls.hf_f32 if self._f32 else self._cls.scaled
        scaling = self._scaling
        mscales = scaling.get("mscales")  # longrope (short, long): Phi-3-small's keys
        if mscales is not None:
            scaling = {k: v for k, v in scaling.items() if k != "mscales"}
            threshold = self._info.seq_len_threshold
            mscale = mscales[1] if threshold is not None and (seq_len or 0) > threshold \
                else mscales[0]
            if mscale is not None:
                scaling["attention_factor"] = mscale
        plan = make(self._info.rotary_dim, self._info.base, scaling,
                    seq_len=seq_len or 0, **self._kwargs)
        plan.hf = replace(self._info, seq_len=seq_len, pinned=pinned, _maker=self)
        return plan

    def pinned(self, seq_len):
        """A new plan with the frequencies of seq_len, marked pinned (not cached)."""
        seq_len = self._length(seq_len)
        info = self._info
        if info.seq_dependent and seq_len is not None and seq_len > info.seq_len_threshold:
            if info.rope_type == "longrope":
                return self._make(info.seq_len_threshold + 1, pinned=True)
            return self._make(seq_len, pinned=True)
        return self._make(None, pinned=True)

    @staticmethod
    def _length(seq_len):
        if seq_len is None:
            return None
        if isinstance(seq_len, (bool, np.bool_)):
            raise TypeError("seq_len must be an integer or None, not bool")
        try:
            return operator.index(seq_len)
        except TypeError:
            raise TypeError("seq_len must be an integer or None, "
                            f"not {type(seq_len).__name__}") from None

    @staticmethod
    def _alive(plan):
        return plan is not None and getattr(plan, "_handle", None) is not None

    def plan(self, seq_len):
        seq_len = self._length(seq_len)
        info = self._info
        above = (info.seq_dependent and seq_len is not None
                 and seq_len > info.seq_len_threshold)
        with self._lock:
            if not above:
                if not self._alive(self._initial):
                    self._initial = self._make(None)
                return self._initial
            if info.rope_type == "longrope":
                if not self._alive(self._long):
                    # HF computes the long factors once, with seq_len = threshold + 1
                    self._long = self._make(info.seq_len_threshold + 1)
                return self._long
            plan = self._dynamic.get(seq_len)
            if self._alive(plan):
                self._dynamic.move_to_end(seq_len)
                return plan
            plan = self._make(seq_len)
            self._dynamic[seq_len] = plan
            self._dynamic.move_to_end(seq_len)
            while len(self._dynamic) > _DYNAMIC_CACHE_SIZE:
                self._dynamic.popitem(last=False)
            return plan


# --- parsing ------------------------------------------------------------------------------

def _parse(config):
    """(HfRope without maker, scaling dict for RopePlan.scaled, its keyword arguments)."""
    src = _select(config)
    d, where = _rope_dict(src)
    kind, mrope = _rope_type(d, src, where)

    required, optional = _TYPE_KEYS[kind]
    unknown = sorted(set(d) - _COMMON_KEYS - required - optional, key=str)
    if unknown:
        allowed = sorted(_COMMON_KEYS | required | optional)
        raise ValueError(f"{where} has key(s) {', '.join(map(repr, unknown))} that rope type "
                         f"{kind!r} does not read (it reads {', '.join(allowed)})")
    for key in sorted(required):
        if d.get(key) is None and not (kind == "yarn" and key == "factor" and key in d):
            raise ValueError(f"{where} lacks {key!r}, which rope type {kind!r} requires")

    def opt(key):
        value = d.get(key)
        return _MISSING if value is None else value

    # base, rotary_dim
    theta = _one_value("rope_theta", opt("rope_theta"), where, src.get("rope_theta"),
                       f"{src.where}'s rope_theta")
    # Phi-3-small's config (its own modeling code) names the base rope_embedding_base and
    # has a rope_position_scale, which posenc reads only as 1
    theta = _one_value("rope_theta", theta, "the rope_theta", src.get("rope_embedding_base"),
                       f"{src.where}'s rope_embedding_base")
    position_scale = src.get("rope_position_scale")
    if position_scale is not _MISSING and _number("rope_position_scale", position_scale) != 1.0:
        raise ValueError(f"rope_position_scale {position_scale} (Phi-3-small's positions "
                         "multiplier) is not supported: only 1")
    base = 10000.0 if theta is _MISSING else _number("rope_theta", theta)
    prf = _one_value("partial_rotary_factor", opt("partial_rotary_factor"), where,
                     src.get("partial_rotary_factor"), f"{src.where}'s partial_rotary_factor")
    prf = 1.0 if prf is _MISSING else _number("partial_rotary_factor", prf)
    if not 0.0 < prf <= 1.0:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], not {prf}")
    head_dim = src.get("head_dim")
    if head_dim is _MISSING:
        hidden, heads = src.get("hidden_size"), src.get("num_attention_heads")
        if hidden is _MISSING or heads is _MISSING:
            raise ValueError(f"{src.where} gives neither head_dim nor hidden_size and "
                             "num_attention_heads")
        head_dim = _count("hidden_size", hidden) // _count("num_attention_heads", heads)
    head_dim = _count("head_dim", head_dim)
    rotary_dim = int(head_dim * prf)  # as HF: int(head_dim * partial_rotary_factor)
    if rotary_dim == 0 or rotary_dim % 2:
        raise ValueError(f"rotary_dim = int(head_dim * partial_rotary_factor) = "
                         f"int({head_dim} * {prf}) = {rotary_dim} must be even and positive")

    # multimodal RoPE
    section = opt("mrope_section")
    if section is _MISSING:
        if mrope:
            raise ValueError(f"{where} names rope type 'mrope' but has no 'mrope_section'")
        section = None
    else:
        if isinstance(section, (str, bytes, Mapping)) or not hasattr(section, "__len__"):
            raise ValueError(f"mrope_section must be three pair counts, not {section!r}")
        section = tuple(_count("mrope_section entries", s, 0) for s in section)
        if len(section) != 3 or sum(section) != rotary_dim // 2:
            raise ValueError(f"mrope_section {list(section)} must be three pair counts summing "
                             f"to rotary_dim / 2 = {rotary_dim // 2}")
    interleaved = opt("mrope_interleaved")
    if interleaved is _MISSING:
        interleaved = False
    elif not isinstance(interleaved, (bool, np.bool_)):
        raise ValueError(f"mrope_interleaved must be a bool, not {interleaved!r}")
    elif interleaved and section is None:
        raise ValueError("mrope_interleaved is set but there is no mrope_section")
    interleaved = bool(interleaved)

    # lengths
    max_pos = src.get("max_position_embeddings")
    max_pos = None if max_pos is _MISSING else _count("max_position_embeddings", max_pos)
    dict_orig = opt("original_max_position_embeddings")
    if dict_orig is not _MISSING:
        dict_orig = _count("original_max_position_embeddings", dict_orig)

    def need_max_pos(why):
        if max_pos is None:
            raise ValueError(f"rope type {kind!r} needs the config's max_position_embeddings "
                             f"({why})")
        return max_pos

    def pretraining_length():
        # yarn, longrope, llama3: transformers 5.x's standardize_rope_params takes Phi-3's
        # config-level value first, then the dict's, then max_position_embeddings
        cfg_orig = src.get("original_max_position_embeddings")
        if cfg_orig is not _MISSING:
            cfg_orig = _count("original_max_position_embeddings", cfg_orig)
        orig = _one_value("original_max_position_embeddings", cfg_orig,
                          f"{src.where} (config level)", dict_orig, where)
        if orig is _MISSING:
            orig = need_max_pos("original_max_position_embeddings defaults to it")
        return orig, cfg_orig is not _MISSING

    def num(key):
        return _number(key, d[key])

    scaling = {"rope_type": kind}
    kwargs = {}
    seq_dependent = False
    threshold = None
    if kind in ("linear", "dynamic", "llama3"):
        scaling["factor"] = num("factor")
    if kind == "dynamic":
        kwargs["max_position_embeddings"] = need_max_pos("the length above which HF rescales")
        if dict_orig is not _MISSING and dict_orig != max_pos:
            raise ValueError(
                f"{where} has original_max_position_embeddings {dict_orig}, but HF's 'dynamic' "
                f"type does not read it: it rescales above max_position_embeddings {max_pos}; "
                "drop the key or make it equal")
        seq_dependent = True
        threshold = max_pos
    elif kind == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            scaling[key] = num(key)
        kwargs["original_max_position_embeddings"], _ = pretraining_length()
    elif kind == "yarn":
        orig, _ = pretraining_length()
        kwargs["original_max_position_embeddings"] = orig
        if d.get("factor") is None:  # transformers 5.x: factor = max_pos / original
            need_max_pos("'factor' is None, so it is max_position_embeddings / "
                         "original_max_position_embeddings")
        else:
            scaling["factor"] = num("factor")
            if scaling["factor"] < 1.0 and opt("attention_factor") is _MISSING:
                # HF requires factor >= 1 (a warning); below it, 4.49 takes 0.1 ln(factor) + 1
                # as the attention factor and 5.x takes 1
                raise ValueError(f"yarn factor {scaling['factor']} < 1: transformers 4.x and 5.x "
                                 "give it different attention factors; give attention_factor")
        if max_pos is not None:
            kwargs["max_position_embeddings"] = max_pos
        for key in ("attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"):
            if opt(key) is not _MISSING:
                scaling[key] = num(key)
        truncate = opt("truncate")
        if truncate is not _MISSING:
            if not isinstance(truncate, (bool, np.bool_)):
                raise ValueError(f"truncate must be a bool, not {truncate!r}")
            scaling["truncate"] = bool(truncate)
    elif kind == "longrope":
        orig, config_level = pretraining_length()
        kwargs["original_max_position_embeddings"] = orig
        if max_pos is not None:
            kwargs["max_position_embeddings"] = max_pos
        factor = opt("factor")
        if factor is not _MISSING:
            factor = _number("factor", factor)
            if config_level and factor != need_max_pos(
                    "transformers 4.x derives the factor from it") / orig:
                # transformers 4.x takes max_pos / original whenever the config has its own
                # original_max_position_embeddings (Phi-3); 5.x takes the dict's factor
                raise ValueError(
                    f"{where} has factor {factor}, but the config's max_position_embeddings / "
                    f"original_max_position_embeddings = {max_pos} / {orig} = {max_pos / orig}, "
                    "which transformers 4.x uses instead; drop the factor or make it equal")
            scaling["factor"] = factor
        else:
            need_max_pos("the attention factor uses max_position_embeddings / "
                         "original_max_position_embeddings when 'factor' is absent")
        if opt("attention_factor") is not _MISSING:
            scaling["attention_factor"] = num("attention_factor")
        factors = {}
        for key in ("short_factor", "long_factor"):
            value = d[key]
            if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__"):
                raise ValueError(f"{key} must be a list of numbers, not {value!r}")
            factors[key] = [_number(key, v) for v in value]
            scaling[key] = factors[key]
        # Phi-3-small (its own modeling code, as vLLM and MLX read it): the attention
        # factor of the short factors is short_mscale, of the long ones long_mscale, each
        # defaulting to the type's own
        mscales = tuple(None if opt(key) is _MISSING else num(key)
                        for key in ("short_mscale", "long_mscale"))
        if mscales != (None, None):
            if "attention_factor" in scaling:
                raise ValueError(f"{where} has attention_factor and short_mscale / long_mscale, "
                                 "which give the attention factor twice; keep one")
            for key, value in zip(("short_mscale", "long_mscale"), mscales):
                if value is not None and value <= 0:
                    raise ValueError(f"{key} must be > 0, not {value}")
            scaling["mscales"] = mscales
        seq_dependent = (factors["short_factor"] != factors["long_factor"]
                         or (mscales != (None, None) and mscales[0] != mscales[1]))
        threshold = orig if seq_dependent else None
    if scaling.get("attention_factor", 1.0) <= 0:
        raise ValueError(f"attention_factor must be > 0, not {scaling['attention_factor']}")

    info = HfRope(rope_type=kind, head_dim=head_dim, rotary_dim=rotary_dim, base=base,
                  mrope_section=section, mrope_interleaved=interleaved,
                  seq_dependent=seq_dependent, seq_len_threshold=threshold)
    return info, scaling, kwargs


# --- public functions ---------------------------------------------------------------------

def plan_from_hf_config(cls, config, seq_len=None, f32=False):
    """The RopePlan (of class ``cls``) for a HuggingFace transformers model config.

    config: a transformers PretrainedConfig, or a dict of its keys (``config.to_dict()``,
    a config.json). For a composite config whose top level has no rope keys (a
    vision-language model in transformers 5.x), its ``text_config`` is read. Keys read:
      - ``rope_theta`` (default 10000), ``partial_rotary_factor`` (default 1), ``head_dim``
        (else hidden_size // num_attention_heads), ``max_position_embeddings``, and Phi-3's
        config-level ``original_max_position_embeddings``;
      - the rope dict ``rope_scaling`` (transformers 4.x) and/or ``rope_parameters`` (5.x,
        where rope_theta and partial_rotary_factor may live too), with the type in
        ``rope_type`` or the legacy ``type``: "default" ("mrope": default frequencies with an
        ``mrope_section``), "linear" {factor}, "dynamic" {factor}, "yarn" {factor,
        attention_factor, beta_fast, beta_slow, mscale, mscale_all_dim,
        original_max_position_embeddings, truncate}, "longrope" ("su") {short_factor,
        long_factor, factor, attention_factor, original_max_position_embeddings, and
        Phi-3-small's short_mscale and long_mscale: the attention factor of each factor
        set}, "llama3"
        {factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}; any
        type may carry ``mrope_section`` (three pair counts) and ``mrope_interleaved``.
    rotary_dim = int(head_dim * partial_rotary_factor), base = rope_theta. Where transformers
    4.49 and 5.x read the yarn / longrope / llama3 keys differently, 5.x's reading is
    followed (original_max_position_embeddings from the config level, else the dict, else
    max_position_embeddings; an explicit factor over the length ratio) and a config on which
    the two disagree for longrope is refused.

    seq_len: None (the default) for a plan that follows HF per call: it holds HF's initial
    frequencies, and resolve_plan (every kernel call) picks the plan for the call's largest
    position + 1, as HF's rotary module does each forward ("dynamic", "longrope"; see
    HfRope.for_seq_len). An integer fixes the length instead: the plan holds the
    frequencies HF uses for that max(position_ids) + 1, and is marked pinned, so that
    resolve_plan keeps it for every call.

    f32: False (the default) for a plan made by ``cls.scaled`` (double-precision
    frequencies); True for one made by ``cls.hf_f32``: HF's own float32 inv_freq of
    ``ROPE_INIT_FUNCTIONS[rope_type]`` bit for bit, as the imported torch computes it on this
    CPU (for "dynamic", as ROPE_INIT_FUNCTIONS computes it for an integer seq_len).

    Returns the plan, carrying ``.hf``, an HfRope. Raises ValueError naming the key for a key
    the rope type does not read, a required key missing, a value given twice differently
    (rope_type and type, rope_theta / partial_rotary_factor / original_max_position_embeddings
    in the dict and the config, rope_scaling and rope_parameters), a value of the wrong kind,
    and a rotary_dim that is odd or 0; PosencError (a ValueError) for what
    posenc_rope_plan_create_scaled refuses (a factor <= 0, factor arrays of the wrong length,
    ...); TypeError when config is neither a config object nor a dict.
    """
    info, scaling, kwargs = _parse(config)
    maker = _PlanMaker(cls, info, scaling, kwargs, f32)
    return maker.plan(None) if seq_len is None else maker.pinned(seq_len)


def resolve_plan(plan, max_position):
    """The plan to rotate with for a call whose largest position is max_position.

    ``plan`` itself unless it comes from a HF config whose frequencies depend on the
    sequence length (``plan.hf.seq_dependent``) and was not pinned to a length
    (from_hf_config's seq_len); then ``plan.hf.for_seq_len(max_position + 1)``, the plan
    HF's rotary module uses for that call (cached).
    """
    hf = getattr(plan, "hf", None)
    if hf is None or not hf.seq_dependent or hf.pinned:
        return plan
    if isinstance(max_position, (bool, np.bool_)):
        raise TypeError("max_position must be an integer, not bool")
    try:
        max_position = operator.index(max_position)
    except TypeError:
        raise TypeError(f"max_position must be an integer, not {type(max_position).__name__}") \
            from None
    return hf.for_seq_len(max_position + 1)
