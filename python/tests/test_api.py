"""The Python layer itself: library queries, ISA switching, views without copies, errors."""

import re

import numpy as np
import posenc
import pytest

import oracle
from draws import normal_f32

INVALID = "invalid argument"


# --- library and dispatch -------------------------------------------------------------------

def test_library_queries():
    assert re.fullmatch(r"\d+\.\d+\.\d+", posenc.version())
    assert posenc.__version__ == posenc.version()
    isas = posenc.available_isas()
    assert isas[0] == "scalar" and set(isas) <= set(posenc.compiled_isas())
    assert set(posenc.compiled_isas()) <= set(posenc.all_isas())
    assert posenc.all_isas()[0] == "scalar" and "unknown" not in posenc.all_isas()
    assert posenc.active_isa() in isas
    assert isinstance(posenc.cpu_name(), str) and posenc.cpu_name()
    assert isinstance(posenc.cpu_features(), str)
    assert posenc.library_path()


def test_every_c_entry_point_has_a_binding():
    """Each POSENC_API function of include/posenc.h is declared in posenc._lib and called
    by the package's Python code."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    header = root / "include" / "posenc.h"
    if not header.is_file():
        pytest.skip(f"no C header at {header}: tests run outside the repository")
    names = set(re.findall(r"POSENC_API[^;(]*?\b(posenc_\w+)\s*\(", header.read_text()))
    assert len(names) > 60
    package = Path(posenc.__file__).resolve().parent
    code = "".join(p.read_text() for p in package.glob("*.py") if p.name != "_lib.py")
    # called as lib.<name>, or by a stem ("posenc_alibi_add") that _c_function completes
    # with the storage type's suffix
    stems = set(re.findall(r'"(posenc_\w+)"', code))

    def bound(name):
        stem, _, suffix = name.rpartition("_")
        return re.search(rf"\blib\.{name}\b", code) or (suffix in ("f32", "bf16", "f16")
                                                         and stem in stems)

    unbound = sorted(n for n in names if not bound(n))
    assert unbound == [], f"C functions with no Python binding: {unbound}"
    assert not [n for n in names if not hasattr(posenc._lib.lib, n)]


def test_isa_selection():
    import subprocess
    import sys
    code = "import posenc; print(*posenc.isa_selection())"

    def run(env_isa):
        import os
        env = {k: v for k, v in os.environ.items() if k != "POSENC_ISA"}
        if env_isa is not None:
            env["POSENC_ISA"] = env_isa
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True)
        return tuple(out.stdout.split())

    assert run(None)[0] == "auto"
    assert run("scalar") == ("env", "scalar")
    assert run("bogus") == ("env_fallback", "unknown")
    default = posenc.active_isa()
    posenc.set_isa("scalar")
    try:
        assert posenc.isa_selection()[0] == "api"
    finally:
        posenc.set_isa(default)


def test_set_isa_every_available(isa):
    posenc.set_isa(isa)
    assert posenc.active_isa() == isa
    posenc.set_isa(isa.upper())  # names are case-insensitive, as in POSENC_ISA
    assert posenc.active_isa() == isa


def test_set_isa_errors():
    before = posenc.active_isa()
    with pytest.raises(ValueError, match="unknown ISA"):
        posenc.set_isa("mmx")
    with pytest.raises(TypeError):
        posenc.set_isa(3)
    missing = [n for n in posenc.all_isas() if n not in posenc.available_isas()]
    for name in missing:  # neon on x86, x86 tiers on aarch64, tiers the CPU lacks
        with pytest.raises(posenc.PosencError, match="unsupported") as error:
            posenc.set_isa(name)
        assert error.value.status == 2 and error.value.status_string == "unsupported"
    assert posenc.active_isa() == before


# --- no copies: the kernels work on the caller's memory -------------------------------------

def test_rope_packed_qkv_rows(isa, rng):
    """Q and K as views into packed QKV rows [L, (Hq + 2 Hk) D]: rotated in place in the
    buffer, V untouched."""
    posenc.set_isa(isa)
    n, hq, hk, d = 37, 4, 2, 24
    qkv = normal_f32(rng, (n, (hq + 2 * hk) * d))
    original = qkv.copy()
    q = qkv[:, :hq * d].reshape(n, hq, d)
    k = qkv[:, hq * d:(hq + hk) * d].reshape(n, hk, d)
    assert np.shares_memory(q, qkv) and np.shares_memory(k, qkv)
    posenc.rope(posenc.RopePlan(16), q, k, start_pos=5)
    cos, sin = oracle.exact_cos_sin(5 + np.arange(n), posenc.RopePlan(16).freqs)
    for view, first, heads in [(q, 0, hq), (k, hq * d, hk)]:
        block = original[:, first:first + heads * d].reshape(n, heads, d)
        expected, magnitude = oracle.rope(block, cos, sin, 16, "neox")
        assert np.all(np.abs(view - expected) <= 4e-7 * magnitude + 1e-37)
    np.testing.assert_array_equal(qkv[:, (hq + hk) * d:], original[:, (hq + hk) * d:])


def test_rope_head_major_and_padded_views(isa, rng):
    """[H, L, D] storage seen as [L, H, D], and head vectors padded inside a wider buffer: the
    padding is never touched."""
    posenc.set_isa(isa)
    buffer = normal_f32(rng, (3, 50, 40))
    original = buffer.copy()
    view = buffer[:, :, 4:36].transpose(1, 0, 2)  # [L=50, H=3, D=32], strides (40, 2000, 1)
    positions = rng.integers(0, 10000, 50).astype(np.int32)
    posenc.rope(posenc.RopePlan(32), view, positions=positions, layout="gptj")
    assert np.shares_memory(view, buffer)
    np.testing.assert_array_equal(buffer[:, :, :4], original[:, :, :4])
    np.testing.assert_array_equal(buffer[:, :, 36:], original[:, :, 36:])
    assert not np.array_equal(buffer[:, :, 4:36], original[:, :, 4:36])


def test_sinusoid_into_strided_out_and_x(isa, rng):
    posenc.set_isa(isa)
    plan = posenc.SinusoidPlan(10)
    big = np.full((6, 16), 7.0, np.float32)
    out = big[:, 3:13]
    result = posenc.sinusoid_fill(plan, 6, start_pos=2, out=out)
    assert result is out and np.shares_memory(result, big)
    np.testing.assert_array_equal(big[:, :3], 7.0)
    np.testing.assert_array_equal(big[:, 13:], 7.0)
    np.testing.assert_allclose(out, oracle.sinusoid_table(np.arange(2, 8), plan.freqs, 10),
                               atol=2.0 ** -22, rtol=0)
    x_big = normal_f32(rng, (12, 20))
    x_original = x_big.copy()
    x = x_big[::2, 5:15]  # row stride 40 elements
    posenc.sinusoid_add(plan, x)
    np.testing.assert_allclose(x_big[::2, 5:15], x_original[::2, 5:15]
                               + oracle.sinusoid_table(np.arange(6), plan.freqs, 10),
                               atol=2.0 ** -21, rtol=0)
    np.testing.assert_array_equal(x_big[1::2], x_original[1::2])
    t_out = np.zeros((3, 10), np.float32)
    assert posenc.sinusoid_fill_timesteps(plan, np.array([0.5, 1, 999], np.float32),
                                          out=t_out) is t_out


def test_alibi_query_major_scores(isa, rng):
    """Scores stored [n_q, H, n_k] with padded rows, passed as a [H, n_q, n_k] view."""
    posenc.set_isa(isa)
    storage = normal_f32(rng, (5, 4, 40))
    original = storage.copy()
    view = storage[:, :, :33].transpose(1, 0, 2)
    slopes = posenc.alibi_slopes(4)
    posenc.alibi_add(view, slopes, q_offset=28, causal=True)
    expected = oracle.alibi_add_f32(original[:, :, :33].transpose(1, 0, 2), slopes, 28, 1.0, True)
    np.testing.assert_array_equal(view, expected)
    np.testing.assert_array_equal(storage[:, :, 33:], original[:, :, 33:])
    out = np.zeros((4, 5, 40), np.float32)
    bias = posenc.alibi_bias(slopes, 5, 33, out=out[:, :, :33])
    assert np.shares_memory(bias, out)
    np.testing.assert_array_equal(out[:, :, 33:], 0.0)


def test_learned_strided(isa, rng):
    posenc.set_isa(isa)
    table_storage = normal_f32(rng, (10, 12))
    table = table_storage[:, 2:10]
    table.flags.writeable = False  # the table is only read
    x_storage = normal_f32(rng, (7, 9))
    x_original = x_storage.copy()
    x = x_storage[:, :8]
    posenc.learned_add(table, x, positions=[9, 0, 3, 3, 1, 2, 8])
    np.testing.assert_array_equal(x, x_original[:, :8] + table[[9, 0, 3, 3, 1, 2, 8]])
    np.testing.assert_array_equal(x_storage[:, 8], x_original[:, 8])


# --- errors ---------------------------------------------------------------------------------

@pytest.fixture
def q():
    return np.zeros((4, 2, 8), np.float32)


def test_dtype_and_type_errors(q):
    plan = posenc.RopePlan(8)
    with pytest.raises(TypeError, match="float32"):
        posenc.rope(plan, q.astype(np.float64))
    with pytest.raises(TypeError, match="float32"):
        posenc.rope(plan, q.astype(">f4"))
    with pytest.raises(TypeError, match="ndarray"):
        posenc.rope(plan, q.tolist())
    with pytest.raises(TypeError, match="RopePlan"):
        posenc.rope(posenc.SinusoidPlan(8), q)
    with pytest.raises(TypeError, match="integers"):
        posenc.rope(plan, q, positions=np.arange(4.0))
    with pytest.raises(TypeError, match="integer"):
        posenc.RopePlan(8.0)
    with pytest.raises(TypeError, match="real numbers"):
        posenc.alibi_add(np.zeros((1, 1, 1), np.float32), ["a"])


def test_array_layout_errors(q):
    plan = posenc.RopePlan(8)
    read_only = q.copy()
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        posenc.rope(plan, read_only)
    with pytest.raises(ValueError, match="3-D"):
        posenc.rope(plan, q[0])
    with pytest.raises(ValueError, match="contiguous"):
        posenc.rope(plan, np.zeros((4, 2, 16), np.float32)[:, :, ::2])
    with pytest.raises(ValueError, match="stride"):
        posenc.rope(plan, q[::-1])
    broadcast = np.lib.stride_tricks.as_strided(q, shape=(4, 2, 8), strides=(0, 32, 4),
                                                writeable=True)
    with pytest.raises(ValueError, match="stride"):
        posenc.rope(plan, broadcast)
    raw = np.zeros(200, np.uint8)
    odd_stride = np.lib.stride_tricks.as_strided(raw.view(np.float32)[:1], shape=(3, 1, 8),
                                                 strides=(34, 34, 4), writeable=True)
    with pytest.raises(ValueError, match="whole number"):
        posenc.rope(plan, odd_stride)
    unaligned = np.frombuffer(bytearray(4 * 64 + 1), np.float32, 64, offset=1).reshape(4, 2, 8)
    with pytest.raises(ValueError, match="aligned"):
        posenc.rope(plan, unaligned)
    with pytest.raises(ValueError, match="tokens and head_dim"):
        posenc.rope(plan, q, np.zeros((3, 2, 8), np.float32))
    table = np.zeros((4, 8), np.float32)
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(ValueError, match="stride"):  # C would read stride 0 as "dense"
        posenc.learned_add(np.lib.stride_tricks.as_strided(table, (4, 8), (0, 4)), x)
    with pytest.raises(ValueError, match="same width"):
        posenc.learned_add(table, np.zeros((2, 7), np.float32))
    with pytest.raises(ValueError, match=r"shape \(3, 8\)"):
        posenc.sinusoid_fill(posenc.SinusoidPlan(8), 3, out=np.zeros((3, 9), np.float32))
    with pytest.raises(ValueError, match=r"shape \(2, 8\)"):
        posenc.sinusoid_add(posenc.SinusoidPlan(8), np.zeros((2, 9), np.float32))


def test_argument_errors(q):
    plan = posenc.RopePlan(8)
    with pytest.raises(ValueError, match="layout"):
        posenc.rope(plan, q, layout="llama")
    with pytest.raises(ValueError, match="int32"):
        posenc.rope(plan, q, positions=np.array([0, 1, 2, 2 ** 31]))
    with pytest.raises(ValueError, match="4 entries"):
        posenc.rope(plan, q, positions=np.arange(3))
    with pytest.raises(ValueError, match="not both"):
        posenc.rope(plan, q, positions=np.arange(4), start_pos=1)
    with pytest.raises(ValueError, match="start_pos"):
        posenc.rope(plan, q, start_pos=2 ** 31)
    with pytest.raises(ValueError, match="rotary_dim"):
        posenc.RopePlan(-2)
    with pytest.raises(ValueError, match="takes 3 frequencies, got 2"):
        posenc.SinusoidPlan.from_freqs([0.1, 0.2], dim=5)
    plan.close()
    with pytest.raises(ValueError, match="closed"):
        posenc.rope(plan, q)
    assert repr(plan) == "RopePlan(<closed>)"


def expect_status(function, *args, **kwargs):
    with pytest.raises(posenc.PosencError, match=INVALID) as error:
        function(*args, **kwargs)
    assert error.value.status == 1 and error.value.status_string == INVALID
    assert isinstance(error.value, ValueError)


def test_c_status_errors_write_nothing(isa, rng):
    posenc.set_isa(isa)
    expect_status(posenc.RopePlan, 7)
    expect_status(posenc.RopePlan, 8, base=float("nan"))
    expect_status(posenc.RopePlan, 8, attention_factor=0.0)
    expect_status(posenc.RopePlan.from_freqs, [0.1, float("inf")])
    expect_status(posenc.SinusoidPlan, 0)
    expect_status(posenc.SinusoidPlan, 8, base=1.0)
    expect_status(posenc.alibi_slopes, 0)
    expect_status(posenc.alibi_slopes, 4, max_bias=-1.0)

    q = normal_f32(rng, (3, 2, 8))
    q0 = q.copy()
    plan = posenc.RopePlan(8)
    expect_status(posenc.rope, posenc.RopePlan(10), q)  # rotary_dim > head_dim
    expect_status(posenc.rope, plan, q, q)  # K overlapping Q
    expect_status(posenc.rope, plan, q, start_pos=2 ** 31 - 2)  # last position past INT32_MAX
    np.testing.assert_array_equal(q, q0)

    splan = posenc.SinusoidPlan(6)
    out = np.full((3, 6), 5.0, np.float32)
    expect_status(posenc.sinusoid_fill_timesteps, splan, [1.0, float("nan"), 2.0], out=out)
    expect_status(posenc.sinusoid_fill_timesteps, splan, [1.0, 2.0 ** 31, 2.0], out=out)
    np.testing.assert_array_equal(out, 5.0)

    scores = normal_f32(rng, (2, 3, 4))
    scores0 = scores.copy()
    expect_status(posenc.alibi_add, scores, [0.5, float("nan")])
    expect_status(posenc.alibi_add, scores, [0.5, 0.25], scale=float("inf"))
    np.testing.assert_array_equal(scores, scores0)

    table = normal_f32(rng, (5, 4))
    x = normal_f32(rng, (3, 4))
    x0 = x.copy()
    expect_status(posenc.learned_add, table, x, positions=[0, 5, 1])  # outside the table
    expect_status(posenc.learned_add, table, x, start_pos=3)  # 3, 4, 5: past the end
    expect_status(posenc.learned_add, table, table[1:4])  # x overlapping the table
    np.testing.assert_array_equal(x, x0)


def test_empty_calls_are_no_ops(isa):
    posenc.set_isa(isa)
    posenc.rope(posenc.RopePlan(8), np.zeros((0, 2, 8), np.float32))
    posenc.rope(posenc.RopePlan(8), np.zeros((3, 0, 8), np.float32))
    assert posenc.sinusoid_fill(posenc.SinusoidPlan(4), 0).shape == (0, 4)
    assert posenc.sinusoid_fill(posenc.SinusoidPlan(4), []).shape == (0, 4)
    assert posenc.alibi_bias(posenc.alibi_slopes(2), 0, 5).shape == (2, 0, 5)
    posenc.learned_add(np.zeros((3, 0), np.float32), np.zeros((2, 0), np.float32))


# --- calls: destinations and options keyword-only (issue 26, case 4) -------------------------

# The positional parameters of each public function: the plan(s) or factors, the sections,
# and the data the function reads or rotates in place. Everything else (destinations dst= /
# out=, positions, offsets, flags, types) is keyword-only, so that no positional slot means
# one thing in a function and another in its sibling (rope's third is k, never a dst).
POSITIONAL = {
    "rope": ["plan", "q", "k"], "mrope": ["plan", "sections", "q", "k"],
    "rope_rerotate": ["from_plan", "to_plan", "k"], "rope_out": ["plan", "src"],
    "rope_qknorm": ["plan", "q", "q_weight"], "rope_out_slots": ["plan", "src", "cache", "slots"],
    "rope_out_q8_0": ["plan", "src", "dst"],
    "rope_out_fp8": ["plan", "src", "dst"],
    "mrope_out": ["plan", "sections", "src"], "rope_factors": ["plan"],
    "mrope_factors": ["plan", "sections"], "rope_apply": ["factors", "src"],
    "rope_apply_slots": ["factors", "src", "cache", "slots"],
    "apply": ["factors", "src"], "plan_from_ggml": ["n_dims", "freq_base"],
    "ggml_rope_mode": ["mode"],
    "sinusoid_fill": ["plan", "rows"], "sinusoid_fill_timesteps": ["plan", "timesteps"],
    "sinusoid_add": ["plan", "x"], "alibi_slopes": ["n_heads"],
    "alibi_add": ["scores", "slopes"], "alibi_bias": ["slopes", "n_q", "n_k"],
    "alibi_softmax": ["scores", "slopes"], "softmax": ["x"], "learned_add": ["table", "x"],
}
PLAN_POSITIONAL = {
    (posenc.RopePlan, "__init__"): ["self", "rotary_dim", "base"],
    (posenc.RopePlan, "from_freqs"): ["freqs"],
    (posenc.RopePlan, "from_freqs_f32"): ["freqs"],
    (posenc.RopePlan, "scaled"): ["rotary_dim", "base", "rope_scaling"],
    (posenc.RopePlan, "hf_f32"): ["rotary_dim", "base", "rope_scaling"],
    (posenc.RopePlan, "powf"): ["rotary_dim", "base"],
    (posenc.RopePlan, "from_ggml"): ["n_dims", "freq_base"],
    (posenc.RopePlan, "from_hf_config"): ["config"],
    (posenc.SinusoidPlan, "__init__"): ["self", "dim", "base"],
    (posenc.SinusoidPlan, "from_freqs"): ["freqs", "dim"],
}


def positional_names(function):
    import inspect
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in inspect.signature(function).parameters.values() if p.kind in kinds]


def test_every_option_is_keyword_only():
    for name, expected in POSITIONAL.items():
        assert positional_names(getattr(posenc, name)) == expected, name
    for (cls, name), expected in PLAN_POSITIONAL.items():
        assert positional_names(getattr(cls, name)) == expected, (cls.__name__, name)
    # every public function is in the table
    public = {n for n in posenc.__all__ if callable(getattr(posenc, n))
              and not isinstance(getattr(posenc, n), type)}
    queries = {"version", "active_isa", "set_isa", "all_isas", "available_isas",
               "compiled_isas", "cpu_name", "cpu_features", "cpu_sve_vector_bits", "kernels",
               "kernel_isa", "isa_selection", "library_path"}
    assert public - queries == set(POSITIONAL)


def test_rope_out_third_argument_is_not_a_destination(rng):
    """rope(plan, q, k) rotates k; rope_out(plan, q, k) used to take k as dst and overwrite it
    with q rotated. It is a TypeError now, k untouched; dst= is the only way to name one."""
    plan = posenc.RopePlan(8)
    q = normal_f32(rng, (2, 3, 2, 8))
    k = normal_f32(rng, (2, 3, 2, 8))
    k_before = k.copy()
    with pytest.raises(TypeError, match="positional"):
        posenc.rope_out(plan, q, k, axes="BLHD")
    assert np.array_equal(k, k_before)
    factors = posenc.rope_factors(plan, n_rows=3)
    with pytest.raises(TypeError, match="positional"):
        posenc.rope_apply(factors, q, k, axes="BLHD")
    with pytest.raises(TypeError, match="positional"):
        posenc.mrope_out(plan, [2, 1, 1], q, k, positions=np.zeros((3, 3), np.int32),
                         axes="BLHD")
    assert np.array_equal(k, k_before)
    out = posenc.rope_out(plan, q, dst=k, axes="BLHD")
    assert out is k and not np.array_equal(k, k_before)
    with pytest.raises(TypeError, match="positional"):
        posenc.softmax(np.zeros((1, 2, 2), np.float32), np.zeros((1, 2, 2), np.float32))
    with pytest.raises(TypeError, match="positional"):
        posenc.alibi_bias([0.5], 2, 2, 0, False, np.zeros((1, 2, 2), np.float32))
    with pytest.raises(TypeError, match="positional"):
        posenc.sinusoid_fill(posenc.SinusoidPlan(8), 3, 0, "interleaved", False,
                             np.zeros((3, 8), np.float32))


def test_posenc_error_carries_the_library_detail():
    """PosencError.detail: posenc_last_error() of the refused call ("" from a library without
    it); the message ends with it when there is one."""
    with pytest.raises(posenc.PosencError) as error:
        posenc.RopePlan(3)  # odd rotary_dim
    detail = error.value.detail
    assert isinstance(detail, str)
    if detail:
        assert detail in str(error.value) and "invalid argument" in str(error.value)
    else:
        assert str(error.value) == "posenc_rope_plan_create: " + error.value.status_string
