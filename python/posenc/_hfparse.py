"""Reading a HuggingFace config's rotary keys (RopePlan.from_hf_config): the rope dict, the
rope type and its keys, the per-family keys (_hffamily), and the keys that transformers 4.x
and 5.x read differently, in either reading.

Two readings (`reading` "4" or "5"), where they differ (everything else is read alike):
  - yarn: 4.x (as of 4.49) computes the correction range from max_position_embeddings and
    reads none of original_max_position_embeddings, mscale, mscale_all_dim, truncate; its
    attention factor is 0.1 ln(factor) + 1 when none is given (any factor), and a factor of
    None is an error. 5.x takes original_max_position_embeddings (the config level's, else
    the dict's, else max_position_embeddings), get_mscale(factor, mscale) /
    get_mscale(factor, mscale_all_dim) when both are given (else get_mscale(factor): 1 for
    factor <= 1), truncate, and factor None as max_position_embeddings / original.
  - longrope: 4.x takes the config level's original_max_position_embeddings and then
    max_position_embeddings / it as the factor (the dict's factor and
    original_max_position_embeddings unread), else max_position_embeddings as the
    pretraining length and the dict's factor; and only Phi-3's rotary module switches to the
    long factors (past that length): every other 4.49 model keeps the short ones. 5.x: the
    config level's, else the dict's, else max_position_embeddings; the dict's factor, else
    the length ratio; every model switches.
  - llama3: 4.x reads original_max_position_embeddings from the dict only (required); 5.x
    from the config level, else the dict, else max_position_embeddings.
_parse returns, with the reading's parameters, the `aspects`: (key, 4.x reading, 5.x
reading) for each key of this config that the two read differently; the caller compares the
two readings' plans and warns when they differ (_hfconfig).
"""

import collections
import numbers
from collections.abc import Mapping

import numpy as np

from . import _hffamily
from ._hfreadings import _TYPE_READERS, _Lengths, _no_lengths
from ._hfvalues import _MISSING, _Source, _count, _number, _one_value, _same

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

def _select(config):
    """The config holding the text model's rope keys: the config itself, or its text_config
    for a composite (vision-language) config whose top level has no rope keys."""
    if config is None or isinstance(config, (str, bytes, numbers.Number)):
        raise TypeError("config must be a transformers PretrainedConfig or a dict, "
                        f"not {type(config).__name__}")
    top = _Source(config, "the config")
    keys = ("rope_scaling", "rope_parameters", "rope_theta", "rotary_emb_base",
            "rope_local_base_freq")
    if any(top.get(k) is not _MISSING for k in keys):
        return top
    text = top.get("text_config")
    if text is not _MISSING and not isinstance(text, (str, bytes, numbers.Number)):
        inner = _Source(text, "the text_config")
        if any(inner.get(k) is not _MISSING for k in keys):
            return inner
    return top


def _rope_dict(src, layer_type):
    """The rope dict: rope_scaling (4.x) and rope_parameters (5.x) merged, every key given in
    both having one value; of a per-layer-type dict (5.x: {"full_attention": {...},
    "sliding_attention": {...}}), the one of layer_type."""
    merged = {}
    names = {}
    for name in ("rope_scaling", "rope_parameters"):
        d = src.get(name)
        if d is _MISSING:
            continue
        if not isinstance(d, Mapping):
            raise ValueError(f"{name} must be a dict, not {type(d).__name__}")
        if d and all(isinstance(v, Mapping) for v in d.values()):
            if layer_type is None:
                raise ValueError(
                    f"{name} holds one dict per layer type ({', '.join(map(repr, d))}); "
                    "pass layer_type= (one of them) for the plan of that layer type")
            if layer_type not in d:
                raise ValueError(f"layer_type {layer_type!r} is not one of the layer types of "
                                 f"{name} ({', '.join(map(repr, d))})")
            d = d[layer_type]
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




# --- the result of parsing ----------------------------------------------------------------

#: What _parse finds: the HfRope fields (rope_type, head_dim, rotary_dim, base,
#: mrope_section, mrope_interleaved, layout, seq_dependent, seq_len_threshold), the scaling
#: dict and keyword arguments of RopePlan.scaled, and the aspects (key, 4.x reading, 5.x
#: reading) where the two readings of this config differ.
Parsed = collections.namedtuple("Parsed", "fields scaling kwargs aspects")


# --- the common keys: base, sizes, layout, M-RoPE ------------------------------------------

def _base(src, d, where, opt, use_local):
    """rope_theta, wherever a config gives it (the rope dict, the config, GPT-NeoX's
    rotary_emb_base, Phi-3-small's rope_embedding_base: equal where several do), or Gemma 3's
    rope_local_base_freq for its sliding-window layers; else the family's default, 10000."""
    if use_local:
        return _number("rope_local_base_freq", src.get("rope_local_base_freq"))
    theta = _one_value("rope_theta", opt("rope_theta"), where, src.get("rope_theta"),
                       f"{src.where}'s rope_theta")
    for key in ("rotary_emb_base", "rope_embedding_base"):
        theta = _one_value("rope_theta", theta, "the rope_theta", src.get(key),
                           f"{src.where}'s {key}")
    if theta is _MISSING:
        theta = src.family("rope_theta")
    if theta is _MISSING:
        theta = src.family("rotary_emb_base")
    position_scale = src.get("rope_position_scale")
    if position_scale is not _MISSING and _number("rope_position_scale", position_scale) != 1.0:
        raise ValueError(f"rope_position_scale {position_scale} (Phi-3-small's positions "
                         "multiplier) is not supported: only 1")
    return 10000.0 if theta is _MISSING else _number("rope_theta", theta)


def _sizes(src, where, opt):
    """(head_dim, rotary_dim): head_dim (else Qwen-1's kv_channels, else the family's
    default, else hidden_size // num_attention_heads), times partial_rotary_factor (GPT-NeoX:
    rotary_pct), or GPT-J's rotary_dim, or DeepSeek's qk_rope_head_dim (the rotated q_pe /
    k_pe of each head: head_dim and rotary_dim both)."""
    prf = _one_value("partial_rotary_factor", opt("partial_rotary_factor"), where,
                     src.get("partial_rotary_factor"), f"{src.where}'s partial_rotary_factor")
    prf = _one_value("partial_rotary_factor", prf, "the partial_rotary_factor",
                     src.get("rotary_pct"), f"{src.where}'s rotary_pct")
    explicit_prf = prf is not _MISSING
    if prf is _MISSING:
        prf = src.family("partial_rotary_factor")
    if prf is _MISSING:
        prf = src.family("rotary_pct")
    prf = 1.0 if prf is _MISSING else _number("partial_rotary_factor", prf)
    if not 0.0 < prf <= 1.0:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], not {prf}")

    rope_head = src.get("qk_rope_head_dim")
    if rope_head is not _MISSING:
        rope_head = _count("qk_rope_head_dim", rope_head)
        given = src.get("head_dim")
        if given is not _MISSING and _count("head_dim", given) != rope_head:
            raise ValueError(
                f"{src.where} has qk_rope_head_dim {rope_head} and head_dim {given}: the "
                "rotated part of each head (q_pe, k_pe) is qk_rope_head_dim elements; posenc "
                "reads a head_dim only equal to it")
        if prf != 1.0:
            raise ValueError(f"{src.where} has qk_rope_head_dim {rope_head} and "
                             f"partial_rotary_factor {prf}: the rotated part is "
                             "qk_rope_head_dim itself; posenc reads only 1")
        if rope_head % 2:
            raise ValueError(f"qk_rope_head_dim {rope_head} must be even")
        return rope_head, rope_head

    head_dim = _one_value("head_dim", src.get("head_dim"), f"{src.where}'s head_dim",
                          src.get("kv_channels"), f"{src.where}'s kv_channels")
    if head_dim is _MISSING:
        hidden = _one_value("hidden_size", src.get("hidden_size"), "hidden_size",
                            src.get("n_embd"), "n_embd")  # GPT-J, CodeGen: GPT-2's names
        heads = _one_value("num_attention_heads", src.get("num_attention_heads"),
                           "num_attention_heads", src.get("n_head"), "n_head")
        head_dim = src.family("head_dim")  # Gemma's config class: 256, whatever the sizes
        if head_dim is _MISSING and hidden is not _MISSING and heads is not _MISSING:
            head_dim = _count("hidden_size", hidden) // _count("num_attention_heads", heads)
        if head_dim is _MISSING:
            raise ValueError(f"{src.where} gives neither head_dim nor hidden_size and "
                             "num_attention_heads")
    head_dim = _count("head_dim", head_dim)

    fixed = src.get("rotary_dim")  # GPT-J, CodeGen: the rotated size itself
    if fixed is _MISSING and not (src.is_dict and "rotary_dim" in src.config):
        fixed = src.family("rotary_dim")
    if fixed is not _MISSING:
        fixed = _count("rotary_dim", fixed)
        if explicit_prf and int(head_dim * prf) != fixed:
            raise ValueError(f"{src.where} has rotary_dim {fixed} and partial_rotary_factor "
                             f"{prf} (int({head_dim} * {prf}) = {int(head_dim * prf)}), "
                             "which give different rotary sizes")
        if fixed > head_dim or fixed % 2:
            raise ValueError(f"rotary_dim {fixed} must be even and at most head_dim {head_dim}")
        return head_dim, fixed
    rotary_dim = int(head_dim * prf)  # as HF: int(head_dim * partial_rotary_factor)
    if rotary_dim == 0 or rotary_dim % 2:
        raise ValueError(f"rotary_dim = int(head_dim * partial_rotary_factor) = "
                         f"int({head_dim} * {prf}) = {rotary_dim} must be even and positive")
    return head_dim, rotary_dim


def _layout(src):
    interleave = src.get("rope_interleave")
    if interleave is _MISSING:
        interleave = True if src.get("qk_rope_head_dim") is not _MISSING else None
    elif not isinstance(interleave, (bool, np.bool_)):
        raise ValueError(f"rope_interleave must be a bool, not {interleave!r}")
    model_type = src.get("model_type")
    return _hffamily.layout_of(model_type if isinstance(model_type, str) else None,
                               None if interleave is None else bool(interleave))


def _mrope(opt, mrope, rotary_dim, where):
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
    return section, bool(interleaved)


# --- parsing ------------------------------------------------------------------------------

def parse(config, reading, layer_type=None):
    """Parsed for a config in the reading of transformers `reading` ("4": as transformers
    4.49 reads it; "5": as 5.x does; "own": Phi-3-small's remote code). ValueError naming
    the key for what the reading refuses."""
    src = _select(config)
    _hffamily.refuse_non_rope(lambda key: None if src.get(key) is _MISSING else src.get(key),
                              src.where)
    if layer_type is not None and layer_type not in _hffamily.LAYER_TYPES:
        raise ValueError(f"layer_type must be one of {', '.join(_hffamily.LAYER_TYPES)}, not "
                         f"{layer_type!r}")
    use_local = False
    if src.get("rope_local_base_freq") is not _MISSING:  # Gemma 3 (transformers 4.x)
        if layer_type is None:
            raise ValueError(
                f"{src.where} has rope_local_base_freq (Gemma 3: the base of the "
                "sliding-window layers, which use default RoPE; the global layers use "
                "rope_theta and rope_scaling): pass layer_type='sliding_attention' or "
                "'full_attention'")
        use_local = layer_type == "sliding_attention"
    if use_local:
        d, where = {"rope_type": "default"}, "the sliding-window layers (rope_local_base_freq)"
    else:
        d, where = _rope_dict(src, layer_type)
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

    base = _base(src, d, where, opt, use_local)
    head_dim, rotary_dim = _sizes(src, where, opt)
    section, interleaved = _mrope(opt, mrope, rotary_dim, where)
    model_type = src.get("model_type")
    model_type = model_type if isinstance(model_type, str) else None
    if model_type == "phi3small":
        reading = "own"  # its own modeling code reads the config, not transformers

    scaling, kwargs, seq_dependent, threshold, aspects = _TYPE_READERS.get(kind, _no_lengths)(
        _Lengths(src, d, where, opt, kind, model_type), reading)
    if scaling.get("attention_factor", 1.0) <= 0:
        raise ValueError(f"attention_factor must be > 0, not {scaling['attention_factor']}")
    fields = dict(rope_type=kind, head_dim=head_dim, rotary_dim=rotary_dim, base=base,
                  mrope_section=section, mrope_interleaved=interleaved, layout=_layout(src),
                  seq_dependent=seq_dependent, seq_len_threshold=threshold)
    return Parsed(fields, scaling, kwargs, aspects)
