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
two places giving one value differently are ValueErrors naming the key, never ignored. The
families' own keys (GPT-NeoX's rotary_pct, DeepSeek's qk_rope_head_dim, ...) are read or
refused too (_hffamily).

transformers 4.x and 5.x read some yarn, longrope and llama3 configs differently (_hfparse's
docstring lists where). The reading follows the installed transformers (4.x: as 4.49 reads
them), or the one named by from_hf_config's `transformers=`; where the two readings of a
config give different plans and the reading was not named, a HfReadingWarning names the key
and both readings.

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
import operator
import sys
import threading
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from . import _hfparse
from ._hfparse import HF_ROPE_TYPES

__all__ = ["HfRope", "HfReadingWarning", "plan_from_hf_config", "resolve_plan", "HF_ROPE_TYPES",
           "installed_transformers"]

# Plans kept per HfRope for "dynamic" lengths above the threshold (most recently used).
_DYNAMIC_CACHE_SIZE = 8


class HfReadingWarning(UserWarning):
    """transformers 4.x and 5.x read this config differently, and from_hf_config was not
    told which reading to follow (transformers=): the message names the key(s), both
    readings and the one followed."""


@dataclass(frozen=True)
class HfRope:
    """What a HF config says about its RoPE, attached to plans as ``plan.hf``.

    rope_type: the HF type ("default", "linear", "dynamic", "yarn", "longrope", "llama3";
    legacy names resolved). head_dim: the attention head size. rotary_dim: the rotated part,
    int(head_dim * partial_rotary_factor). base: rope_theta. mrope_section: the three pair
    counts of multimodal RoPE (sum rotary_dim / 2; for posenc.mrope) or None.
    mrope_interleaved: the Qwen3-VL interleaved pair assignment. layout: the pair layout the
    family's attention rotates ("neox": halves, "gptj": interleaved pairs: GPT-J, CodeGen,
    Cohere, GLM, DeepSeek, ...), the kernels' default for this plan. transformers: the
    reading followed ("4": transformers 4.x as of 4.49, "5": 5.x, "own": a family's own
    modeling code, Phi-3-small). layer_type: the layer type the plan is for (Gemma 3's
    "sliding_attention" / "full_attention"), or None. seq_dependent: whether the
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
    layout: str = "neox"
    transformers: str = "5"
    layer_type: str = None
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


# --- which transformers ---------------------------------------------------------------------

def installed_transformers():
    """The version of the transformers that is imported, else installed (read from its
    metadata, without importing it), or None."""
    module = sys.modules.get("transformers")
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return version
    try:
        from importlib.metadata import PackageNotFoundError, version as package_version
    except ImportError:  # Python 3.7
        return None
    try:
        return package_version("transformers")
    except PackageNotFoundError:
        return None


def _reading(transformers):
    """(reading "4" or "5", named: whether the caller chose it, the version it stands for)."""
    if transformers is None:
        version = installed_transformers()
        if version is None:
            return "5", False, "none installed: 5.x"
        return ("4" if _major(version) < 5 else "5"), False, f"the installed {version}"
    if isinstance(transformers, (int, float)) and not isinstance(transformers, bool):
        transformers = str(transformers)
    if not isinstance(transformers, str):
        raise TypeError(f"transformers must be a version such as '4.49' or '5', or None for the "
                        f"installed one, not {type(transformers).__name__}")
    return ("4" if _major(transformers) < 5 else "5"), True, transformers


def _major(version):
    head = version.strip().split(".")[0]
    if not head.isdigit() or int(head) < 4:
        raise ValueError(f"transformers {version!r}: posenc reads configs as transformers 4.x "
                         "(as 4.49) or 5.x do: pass '4', '5' or a version of either")
    return int(head)


def _same_plans(cls, a, b):
    """Whether two parses give the same frequencies and attention factors for every length
    (the initial plan, and the long / dynamic ones where the lengths matter)."""
    if (a.fields["seq_dependent"], a.fields["seq_len_threshold"]) != \
            (b.fields["seq_dependent"], b.fields["seq_len_threshold"]):
        return False
    if a.scaling == b.scaling and a.kwargs == b.kwargs:
        return True
    lengths = [None]
    if a.fields["seq_dependent"]:
        lengths.append(a.fields["seq_len_threshold"] + 1)
    for seq_len in lengths:
        pa = _PlanMaker(cls, _info(a, "4"), a.scaling, a.kwargs)._make(seq_len)
        pb = _PlanMaker(cls, _info(b, "5"), b.scaling, b.kwargs)._make(seq_len)
        if pa.attention_factor != pb.attention_factor or \
                not np.array_equal(pa.freqs, pb.freqs):
            return False
    return True


def _info(parsed, reading, layer_type=None):
    return HfRope(transformers=reading, layer_type=layer_type, **parsed.fields)


def _warn_divergence(parsed, other, reading, version):
    names = {"4": "transformers 4.x (as 4.49)", "5": "transformers 5.x"}
    lines = []
    for key, four, five in parsed.aspects:
        lines.append(f"{key}: {names['4']}: {four}; {names['5']}: {five}")
    if isinstance(other, ValueError) and not lines:
        lines.append(f"{names['4' if reading == '5' else '5']} refuses it: {other}")
    chosen = names[reading]
    switch = "5" if reading == "4" else "4"
    warnings.warn(
        "transformers 4.x and 5.x read this config differently: " + " | ".join(lines)
        + f". Following {chosen} ({version}); pass transformers='{reading}' to say so, or "
        f"transformers='{switch}' for the other reading.", HfReadingWarning, stacklevel=4)


# --- public functions ---------------------------------------------------------------------

def plan_from_hf_config(cls, config, seq_len=None, f32=False, transformers=None,
                        layer_type=None):
    """The RopePlan (of class ``cls``) for a HuggingFace transformers model config.

    config: a transformers PretrainedConfig, or a dict of its keys (``config.to_dict()``,
    a config.json). For a composite config whose top level has no rope keys (a
    vision-language model in transformers 5.x), its ``text_config`` is read. Keys read:
      - ``rope_theta`` (default 10000, or the model_type's config class default),
        ``partial_rotary_factor`` (default 1), ``head_dim`` (else hidden_size //
        num_attention_heads), ``max_position_embeddings``, and Phi-3's config-level
        ``original_max_position_embeddings``; the families' own keys (GPT-NeoX's
        rotary_pct and rotary_emb_base, GPT-J's rotary_dim, DeepSeek's qk_rope_head_dim and
        rope_interleave, Gemma 3's rope_local_base_freq, Phi-3-small's rope_embedding_base;
        refused: ChatGLM's rope_ratio, flash-attn's rotary_emb_fraction / _dim, and configs
        of models without RoPE: see _hffamily);
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
    rotary_dim = int(head_dim * partial_rotary_factor), base = rope_theta.

    transformers: the reading of the keys that transformers 4.x and 5.x read differently
    (yarn's original_max_position_embeddings, mscale, mscale_all_dim, truncate, factor None;
    longrope's pretraining length, factor and the switch to the long factors; llama3's
    original_max_position_embeddings: _hfparse): None (the default) follows the installed
    transformers (4.x: as 4.49 reads them; none installed: 5.x) and, where the two readings
    give different plans for this config, warns (HfReadingWarning) naming the key and both
    readings; "4" or "5" (or a version such as "4.49.0") follows that one without a warning.

    layer_type: for configs whose layer types have their own RoPE (Gemma 3's
    rope_local_base_freq, transformers 5.x's rope_parameters per layer type):
    "sliding_attention" or "full_attention", required there.

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

    Returns the plan, carrying ``.hf``, an HfRope (its ``layout`` is the family's pair
    layout, which the kernels use by default). Raises ValueError naming the key for a key
    the rope type does not read, a required key missing, a value given twice differently
    (rope_type and type, rope_theta / partial_rotary_factor / original_max_position_embeddings
    in the dict and the config, rope_scaling and rope_parameters), a value of the wrong kind,
    a config the reading refuses, and a rotary_dim that is odd or 0; PosencError (a
    ValueError) for what posenc_rope_plan_create_scaled refuses (a factor <= 0, factor
    arrays of the wrong length, ...); TypeError when config is neither a config object nor a
    dict.
    """
    reading, named, version = _reading(transformers)
    parsed = _hfparse.parse(config, reading, layer_type)
    if parsed.aspects and not named:
        other_reading = "5" if reading == "4" else "4"
        try:
            other = _hfparse.parse(config, other_reading, layer_type)
        except ValueError as error:
            other = error
        if isinstance(other, ValueError) or not _same_plans(cls, *(
                (parsed, other) if reading == "4" else (other, parsed))):
            _warn_divergence(parsed, other, reading, version)
    used = "own" if parsed.fields.get("rope_type") and _is_own(config) else reading
    maker = _PlanMaker(cls, _info(parsed, used, layer_type), parsed.scaling, parsed.kwargs, f32)
    return maker.plan(None) if seq_len is None else maker.pinned(seq_len)


def _is_own(config):
    src = _hfparse._select(config)
    return src.get("model_type") == "phi3small"


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
