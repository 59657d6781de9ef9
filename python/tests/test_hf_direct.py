"""posenc.hf.RotaryEmbedding.forward's direct path (int64 / int32 position_ids of plain RoPE:
the C calls made straight, for the decode step's speed) against the generic path it stands
for (RotaryEmbedding._forward: rope_factors through the generic binding): bit for bit the
same cos, sin (values, dtype, shape, strides), factors and errors."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from posenc import hf as phf  # noqa: E402

COMMON = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2)

CONFIGS = {
    "llama": lambda: transformers.LlamaConfig(**COMMON, max_position_embeddings=2048,
                                              rope_theta=500000.0),
    "dynamic": lambda: transformers.LlamaConfig(
        **COMMON, max_position_embeddings=2048, rope_theta=10000.0,
        rope_scaling={"rope_type": "dynamic", "factor": 4.0}),
    "phi3": lambda: transformers.Phi3Config(
        **COMMON, max_position_embeddings=131072, original_max_position_embeddings=4096,
        rope_theta=10000.0, partial_rotary_factor=0.75, pad_token_id=0, bos_token_id=1,
        eos_token_id=2,
        rope_scaling={"type": "longrope", "short_factor": [1.0, 1.05, 1.2, 1.5, 2.0, 3.0],
                      "long_factor": [1.0, 1.3, 2.1, 4.5, 9.0, 17.0]}),
    "cohere": lambda: transformers.CohereConfig(**COMMON, max_position_embeddings=8192,
                                                rope_theta=10000.0),  # GPT-J pairs
}

POSITIONS = {
    "decode": lambda: torch.tensor([[4095]]),
    "zero": lambda: torch.tensor([[0]]),
    "batch": lambda: torch.tensor([[7], [5000]]),
    "negative": lambda: torch.tensor([[-5, 3]]),
    "1-D": lambda: torch.arange(3, 9),
    "int32": lambda: torch.tensor([[4095, 9000]], dtype=torch.int32),
    "prompt": lambda: torch.arange(24).view(2, 12) * 7 + 100,
    "long": lambda: torch.arange(600)[None] + 70000,  # past _LIST_POSITIONS: NumPy's way
    "strided": lambda: torch.arange(1200).view(600, 2).t() * 5 - 7,
    "int32 max": lambda: torch.tensor([[2 ** 31 - 1]]),
}

BAD_POSITIONS = {
    "past int32": lambda: torch.tensor([[2 ** 31]]),
    "below int32": lambda: torch.tensor([[-2 ** 31 - 1, 0]]),
    "past int32, long": lambda: torch.arange(300)[None] + 2 ** 31 - 100,
}


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
    assert a.is_contiguous() and not a.requires_grad and not b.requires_grad
    size = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    assert torch.equal(a.view(size), b.view(size))


@pytest.mark.parametrize("mode", phf.MODES)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_direct_path_is_the_generic_path(config, mode):
    rotary = phf.RotaryEmbedding(CONFIGS[config](), mode)
    for name, make in POSITIONS.items():
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
            x = torch.zeros(1, dtype=dtype)
            cos, sin = rotary(x, make())       # the direct path
            want = rotary._forward(x, make())  # the generic one, at the same state
            _same(cos, want[0])
            _same(sin, want[1])
            ours, theirs = cos._posenc_rotation, want[0]._posenc_rotation
            assert (ours.n_batch, ours.n_tokens, ours.rotary_dim, ours.sections) == \
                (theirs.n_batch, theirs.n_tokens, theirs.rotary_dim, theirs.sections)
            assert ours.factors.n_rows == theirs.factors.n_rows
            assert ours.factors.layout == theirs.factors.layout
            assert ours.factors.storage.tobytes() == theirs.factors.storage.tobytes(), name


@pytest.mark.parametrize("mode", phf.MODES)
def test_direct_path_refuses_as_the_generic_path(mode):
    rotary = phf.RotaryEmbedding(CONFIGS["llama"](), mode)
    x = torch.zeros(1)
    for name, make in BAD_POSITIONS.items():
        with pytest.raises(ValueError) as direct:
            rotary(x, make())
        with pytest.raises(ValueError) as generic:
            rotary._forward(x, make())
        assert str(direct.value) == str(generic.value)
        assert "outside the int32 range" in str(direct.value), name


def test_compat_plan_follows_inv_freq_changed_in_place():
    """The compat plan cached for the latest inv_freq is made again when that tensor is
    changed in place (its version), as the plan of its values."""
    rotary = phf.RotaryEmbedding(CONFIGS["llama"](), "compat")
    x, pos = torch.zeros(1), torch.tensor([[4095]])
    before = rotary(x, pos)[0]
    rotary._hf.inv_freq.mul_(0.5)
    after = rotary(x, pos)[0]
    fresh = phf.RotaryEmbedding(CONFIGS["llama"](), "compat")
    fresh._hf.inv_freq = rotary._hf.inv_freq.clone()
    assert not torch.equal(before, after)
    _same(after, fresh(x, pos)[0])
