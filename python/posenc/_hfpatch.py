"""posenc.hf.patch, unpatch, patched and patch_mode: a loaded HF model switched to
posenc's RoPE (posenc.hf's RotaryEmbedding and apply functions) and back."""

import contextlib
import importlib

from .hf import RotaryEmbedding, _check_mode, _posenc_mrope, _posenc_rope

# model_type -> (modeling module, rotary class, name of the apply function its attention
# calls, M-RoPE)
_MODELS = {
    "llama": ("transformers.models.llama.modeling_llama", "LlamaRotaryEmbedding",
              "apply_rotary_pos_emb", False),
    "qwen2": ("transformers.models.qwen2.modeling_qwen2", "Qwen2RotaryEmbedding",
              "apply_rotary_pos_emb", False),
    "phi3": ("transformers.models.phi3.modeling_phi3", "Phi3RotaryEmbedding",
             "apply_rotary_pos_emb", False),
    "qwen2_vl": ("transformers.models.qwen2_vl.modeling_qwen2_vl", "Qwen2VLRotaryEmbedding",
                 "apply_multimodal_rotary_pos_emb", True),
    "mistral": ("transformers.models.mistral.modeling_mistral", "MistralRotaryEmbedding",
                "apply_rotary_pos_emb", False),
    "gemma": ("transformers.models.gemma.modeling_gemma", "GemmaRotaryEmbedding",
              "apply_rotary_pos_emb", False),
    "gemma2": ("transformers.models.gemma2.modeling_gemma2", "Gemma2RotaryEmbedding",
               "apply_rotary_pos_emb", False),
    "olmo2": ("transformers.models.olmo2.modeling_olmo2", "Olmo2RotaryEmbedding",
              "apply_rotary_pos_emb", False),
    # Qwen3 and Gemma 3 came with transformers 4.51 and 4.50: their modeling files call
    # apply_rotary_pos_emb alike, but are not tested here (transformers 4.49)
}

SUPPORTED_MODEL_TYPES = tuple(_MODELS)
"""The config.model_type values patch() accepts."""


_PATCH_ATTR = "_posenc_hf_patch"
_patched_classes = {}  # (original attention class, apply name) -> posenc subclass


class _PatchState:
    """What patch() changed on a model: the rotary modules replaced ((parent, attribute
    name, original module)) and the attention modules whose class was swapped ((module,
    original class))."""

    def __init__(self, mode):
        self.mode = mode
        self.rotaries = []
        self.attentions = []


def _model_type(model):
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in _MODELS:
        supported = ", ".join(SUPPORTED_MODEL_TYPES)
        raise ValueError(f"posenc.hf.patch: unsupported model type {model_type!r} "
                         f"({type(model).__name__}); supported: {supported}")
    return model_type


def _own_forward(cls, module_name, apply_name):
    """The forward function cls defines or inherits from the modeling module when that
    function calls apply_name as a global, else None."""
    for klass in cls.__mro__:
        function = klass.__dict__.get("forward")
        if function is None:
            continue
        code = getattr(function, "__code__", None)
        if (getattr(function, "__module__", None) == module_name and code is not None
                and apply_name in code.co_names):
            return function
        return None
    return None


def _posenc_class(cls, forward, apply_name, apply_fn):
    """A subclass of the attention class cls whose forward is cls's own code with the global
    apply_name bound to apply_fn (the function's globals copied, that one name replaced): so
    only modules whose class is swapped to it call posenc, and the modeling module itself
    is left as it is."""
    key = (cls, apply_name)
    sub = _patched_classes.get(key)
    if sub is None:
        import types

        scope = dict(forward.__globals__)
        scope[apply_name] = apply_fn
        new_forward = types.FunctionType(forward.__code__, scope, forward.__name__,
                                         forward.__defaults__, forward.__closure__)
        new_forward.__kwdefaults__ = forward.__kwdefaults__
        new_forward.__qualname__ = forward.__qualname__
        new_forward.__doc__ = forward.__doc__
        new_forward.__dict__.update(forward.__dict__)
        new_forward.__module__ = forward.__module__
        sub = type(cls.__name__, (cls,), {
            "forward": new_forward, "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": f"{cls.__name__} rotating q and k with posenc (posenc.hf.patch); "
                       f"unpatch() restores {cls.__name__}.",
            "_posenc_original_class": cls})
        _patched_classes[key] = sub
    return sub


def _model_apply(original, multimodal):
    """The apply function a patched attention calls: posenc with posenc's cos/sin, else the
    modeling module's own function (HF's result, bit for bit)."""
    if multimodal:
        def apply(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
            out = _posenc_mrope(q, k, cos, sin, mrope_section, unsqueeze_dim)
            return out if out is not None else original(q, k, cos, sin, mrope_section,
                                                        unsqueeze_dim)
    else:
        def apply(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
            out = _posenc_rope(q, k, cos, sin, unsqueeze_dim)
            return out if out is not None else original(q, k, cos, sin, position_ids,
                                                        unsqueeze_dim)
    apply.__name__ = original.__name__
    apply.__doc__ = (f"{original.__name__} of {original.__module__}, backed by posenc "
                     "(posenc.hf): posenc's kernel with cos/sin from posenc.hf.RotaryEmbedding, "
                     "HF's function otherwise.")
    return apply


def patch(model, mode="accurate"):
    """Switches a loaded HF model to posenc's RoPE; returns the model.

    model: LlamaForCausalLM, Qwen2ForCausalLM, Phi3ForCausalLM,
    Qwen2VLForConditionalGeneration, MistralForCausalLM, GemmaForCausalLM,
    Gemma2ForCausalLM, Olmo2ForCausalLM, or another module of transformers 4.4x's llama,
    qwen2, phi3, qwen2_vl, mistral, gemma, gemma2, olmo2 modeling files holding the decoder
    (known by model.config.model_type; others: ValueError). CPU only. mode: "accurate"
    (the default: the config read as the installed transformers reads it) or "compat" (see
    RotaryEmbedding).

    What changes, on this model only:
      - every rotary module of the decoder (the modeling file's *RotaryEmbedding held by a
        non-attention module: model.model.rotary_emb) is replaced by a RotaryEmbedding
        (compat mode reads HF's inv_freq from the module it replaces). Qwen2-VL's unused
        per-attention rotary modules and its vision tower are left alone.
      - every attention module whose forward calls the file's apply_rotary_pos_emb
        (apply_multimodal_rotary_pos_emb for Qwen2-VL) gets a posenc subclass of its class
        (module.__class__ swapped; isinstance still holds): the same forward code, with that
        one global name bound to a function that rotates with posenc when cos/sin come from
        a RotaryEmbedding and calls the file's own function otherwise. The modeling module's
        globals, the classes and other models are not touched.
    A model already patched is first unpatched (so patch switches modes). The weights, the
    config and the state dict are unchanged; unpatch() restores the original modules and
    classes. A patched model is not picklable as a whole (save its state dict, or unpatch).
    """
    mode = _check_mode(mode)
    model_type = _model_type(model)
    module_name, rotary_name, apply_name, multimodal = _MODELS[model_type]
    if patch_mode(model) is not None:
        unpatch(model)
    modeling = importlib.import_module(module_name)
    rotary_cls = getattr(modeling, rotary_name)
    original_apply = getattr(modeling, apply_name)
    apply_fn = _model_apply(original_apply, multimodal)

    attentions = []
    for module in model.modules():
        forward = _own_forward(type(module), module_name, apply_name)
        if forward is not None:
            attentions.append((module, forward))
    attention_ids = {id(module) for module, _ in attentions}
    rotaries = []
    for parent in model.modules():
        if id(parent) in attention_ids:
            continue
        for name, child in parent.named_children():
            if isinstance(child, rotary_cls):
                rotaries.append((parent, name, child))
    if not rotaries or not attentions:
        raise ValueError(f"posenc.hf.patch: found {len(rotaries)} {rotary_name} module(s) and "
                         f"{len(attentions)} attention module(s) calling {apply_name} in "
                         f"{type(model).__name__}; is this a {model_type} model of a "
                         "supported transformers version?")
    for _, _, child in rotaries:
        inv_freq = getattr(child, "inv_freq", None)
        if inv_freq is not None and inv_freq.device.type != "cpu":
            raise ValueError(f"posenc.hf.patch: the model is on {inv_freq.device}; posenc "
                             "runs on CPU tensors only")

    state = _PatchState(mode)
    replacements = [(parent, name, child,
                     RotaryEmbedding(child.config if hasattr(child, "config") else model.config,
                                     mode, hf_module=child))
                    for parent, name, child in rotaries]
    for parent, name, child, new in replacements:
        setattr(parent, name, new)
        state.rotaries.append((parent, name, child))
    for module, forward in attentions:
        cls = type(module)
        module.__class__ = _posenc_class(cls, forward, apply_name, apply_fn)
        state.attentions.append((module, cls))
    object.__setattr__(model, _PATCH_ATTR, state)
    return model


def unpatch(model):
    """Undoes patch(model): puts the original rotary modules back and restores the original
    class of every attention module. Returns True, or False if the model was not patched."""
    state = model.__dict__.pop(_PATCH_ATTR, None)
    if state is None:
        return False
    for module, cls in state.attentions:
        module.__class__ = cls
    for parent, name, child in state.rotaries:
        setattr(parent, name, child)
    return True


def patch_mode(model):
    """The mode of a model patched by patch() ("accurate" or "compat"), or None."""
    state = model.__dict__.get(_PATCH_ATTR)
    return None if state is None else state.mode


@contextlib.contextmanager
def patched(model, mode="accurate"):
    """Context manager: the model patched (patch(model, mode)) inside the block, as it was
    before afterwards (unpatched, or patched in its former mode). Yields the model."""
    before = patch_mode(model)
    patch(model, mode)
    try:
        yield model
    finally:
        unpatch(model)
        if before is not None:
            patch(model, before)
