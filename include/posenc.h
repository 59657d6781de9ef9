/** \file
 * posenc: SIMD kernels for transformer positional encodings.
 *
 * One library carries scalar, SSE4, AVX2 and AVX-512 (x86) and NEON (aarch64) variants of
 * every kernel; a runtime dispatcher picks the fastest variant the CPU and OS support.
 *
 * Conventions for every function:
 *  - Every function that can fail returns a posenc_status. On any status other than
 *    POSENC_OK nothing has been written to any output buffer.
 *  - Sizes and strides are counted in elements, not bytes.
 *  - Kernels are reentrant, allocate nothing and keep no state: call them from as many
 *    threads as you like, on disjoint buffers.
 *  - Kernels never read or write outside the elements they are given.
 *  - NaN and infinity in tensor data propagate as IEEE arithmetic says; NaN or infinite
 *    parameters (base, frequencies, factors) are rejected with POSENC_ERR_INVALID_ARGUMENT.
 *    Where an operation has two NaN operands, which payload comes out is the compiler's
 *    and the hardware's choice: "bit-identical" below means identical bits for every
 *    element that is not NaN, and NaN where the reference has NaN.
 */
#ifndef POSENC_H
#define POSENC_H

#include <stddef.h>
#include <stdint.h>

#include "posenc_version.h"

#if defined(_WIN32) && !defined(POSENC_STATIC)
#if defined(POSENC_BUILDING)
#define POSENC_API __declspec(dllexport)
#else
#define POSENC_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define POSENC_API __attribute__((visibility("default")))
#else
#define POSENC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------------------------------------- */
/** \defgroup version Version
 * @{
 */

/** "MAJOR.MINOR.PATCH" of the library actually linked (POSENC_VERSION_STRING is the one
 * compiled against). */
POSENC_API const char *posenc_version(void);

/** @} */

/* --------------------------------------------------------------------------------------- */
/** \defgroup status Status
 * @{
 */

typedef enum posenc_status {
  POSENC_OK = 0,
  POSENC_ERR_INVALID_ARGUMENT = 1, /**< null pointer, bad size, overflow, forbidden aliasing,
                                         NaN/Inf parameter */
  POSENC_ERR_UNSUPPORTED = 2,      /**< ISA not compiled in or not supported by this CPU/OS */
  POSENC_ERR_OUT_OF_MEMORY = 3     /**< an allocation (plan creation only) failed */
} posenc_status;

/** A static, human-readable description of a status ("invalid argument", ...). Never NULL;
 * an unknown value gives "unknown status". */
POSENC_API const char *posenc_status_string(posenc_status status);

/** Why the calling thread's last refused call was refused: "<function>: <argument>: <rule
 * broken>", naming the public function called and the argument at fault (a field, as in
 * "q->head_stride", or an element, as in "params->slopes[2]", where the rule is about one),
 * e.g. "posenc_rope_f32: head_dim: 96 is less than the plan's rotary_dim 128". Every call
 * that returns a status other than POSENC_OK sets it (POSENC_ERR_UNSUPPORTED and
 * POSENC_ERR_OUT_OF_MEMORY too, with the argument that asked for it); a successful call
 * leaves it as it was, as errno is left: read it right after a call returned an error, on
 * the same thread. "" until the thread's first refused call. Never NULL.
 * Thread-local, in a fixed buffer of the library (at most 255 characters; a longer detail is
 * cut there): nothing is allocated, and a success costs nothing. The pointer stays valid for
 * the thread's lifetime; the text changes at its next refused call. The wording is for
 * people and may change between versions: branch on the status, not on the text. */
POSENC_API const char *posenc_last_error(void);

/** @} */

/* --------------------------------------------------------------------------------------- */
/** \defgroup isa Instruction sets and dispatch
 *
 * The active ISA is chosen once, at the first call that needs it (thread-safe): the best
 * available one, unless the environment variable POSENC_ISA names another
 * (scalar|sse4|avx2|avx512|avx512bf16|neon|sve|rvv, case-insensitive). A request for an ISA that is
 * not available, or an unknown name, falls back to the best available one and is reported by
 * posenc_isa_selection(); posenc never executes an instruction the CPU lacks.
 *
 *  - sse4:   SSE4.1 + SSE4.2.
 *  - avx2:   AVX2 + FMA + F16C, and the OS saves YMM state (XGETBV).
 *  - avx512: AVX-512 F, BW, DQ and VL, and the OS saves ZMM and opmask state.
 *  - avx512bf16: avx512 plus AVX512_BF16 (Cooper Lake, Sapphire Rapids and later, AMD
 *            Zen 4 and later): bf16 RoPE (rope_bf16, rope_f32_bf16) rounds with
 *            VCVTNE2PS2BF16 (bit for bit the avx512 result); every other kernel is
 *            avx512's.
 *  - neon:   every aarch64 CPU.
 *  - sve:    aarch64 with SVE (HWCAP_SVE), any vector length (128 to 2048 bits: the
 *            kernels are vector-length agnostic, with predicated tails). Chosen
 *            automatically, its kernels are neon's where the vector length is 128 bits
 *            (see below).
 *  - rvv:    riscv64 with the V extension 1.0 (AT_HWCAP's 'V' bit, and vector use not
 *            turned off for the process: prctl(PR_RISCV_V_GET_CONTROL)), any VLEN (the
 *            kernels are vector-length agnostic; they use at most 2048 bits of a vector
 *            register). Base V only: no Zvfh or Zvbb. Tested under qemu-riscv64 at VLEN
 *            128, 256 and 1024.
 * The enum's values identify tiers; they are not an order (avx512bf16 is above avx512).
 *
 * Kernel by kernel (posenc_kernel_isa()), a tier may leave a kernel to a lower one: a tier
 * that has no variant of its own for a kernel (avx512bf16 for all but bf16 RoPE)
 * uses the tier below it, and, when the ISA was chosen automatically (not by POSENC_ISA or
 * posenc_set_isa()), a documented rule keyed on the CPU picks a lower tier where that tier
 * is measurably faster on that CPU family:
 *  - AMD family 19h with AVX-512 (Zen 4: 512-bit operations run as two 256-bit halves):
 *    f32 sinusoid fills of 16 MiB or more (sinusoid_f32_streamed) from avx2: with
 *    non-temporal stores to DRAM the avx512 loop ran at 0.83-0.86x the avx2 one on an EPYC
 *    Zen 4 (4096 x 4096 table; 0.89x for a loop of the same operations outside posenc), while
 *    avx512 stays the faster below that size; learned_add_f32 from avx2 (one addition per
 *    element, bound by loads and stores: the avx512 loop took 1.01-1.03x avx2's time at 16
 *    tokens x 4096 and 1.06-1.11x at 512); rope_f16 (every f16 -> f16 RoPE form: in
 *    place, out of place, M-RoPE, re-rotation, QK-norm) from avx2: f16 RoPE in place took
 *    1.10-1.11x avx2's time on avx512 at 16 and 512 tokens (40 heads x 128) and 1.005x at
 *    4096 (DRAM-sized). (Unreleased builds between c5ab829 and this rule took it from
 *    avx512, when it ran within 2% of avx2 in cache and 1.04-1.08x faster at 4096 tokens:
 *    the RoPE block path's addressing change of a0cbe47 sped avx2 up more than avx512.)
 *  - SVE with 128-bit vectors (posenc_cpu_sve_vector_bits() <= 128): every kernel from
 *    neon, which is as wide there and has no predicate overhead; sve's own kernels from
 *    256 bits up. This rule is not measured: it was written without SVE hardware (the sve
 *    tier is tested under qemu-aarch64 at 128, 256, 512 and 2048 bits, which says nothing
 *    of speed). POSENC_ISA=sve or neon overrides it.
 * With POSENC_ISA or posenc_set_isa(), every kernel uses the named tier (or the tier
 * below it where the named one has no variant of its own).
 * Within a tier one choice follows the CPU whichever way the tier was chosen (the same bits
 * either way): on AMD family 1Ah and later (Zen 5), RoPE calls of 16 MiB or more, which
 * prefetch their rows, load their f32 sources by four 128-bit loads a vector on avx512 and
 * store by two 256-bit stores (0.92-0.95x the time of two 256-bit loads, themselves 0.96x
 * that of 512-bit ones, at 4096 tokens x 40 heads x 128 in place), and out-of-place calls
 * with 16 MiB of destinations or more, which stream them, read their sources without
 * prefetches (by two 256-bit loads a vector on avx512). Elsewhere by 512-bit loads and
 * stores, and the streamed calls prefetch their sources on every SIMD tier (an Intel Xeon:
 * 0.84-0.95x the time of the four loads at 1024-4096 tokens, the factor-apply form and the
 * re-rotation 0.84-0.93x, then the whole stores 0.92-0.97x again; rope_out into bf16 / f16
 * at 4096 tokens 0.85-0.89x with the prefetches; Zen 4 not measured).
 * @{
 */

typedef enum posenc_isa {
  POSENC_ISA_SCALAR = 0,
  POSENC_ISA_SSE4 = 1,
  POSENC_ISA_AVX2 = 2,
  POSENC_ISA_AVX512 = 3,
  POSENC_ISA_NEON = 4,
  POSENC_ISA_AVX512BF16 = 5,
  POSENC_ISA_SVE = 6,
  POSENC_ISA_RVV = 7,
  POSENC_ISA_COUNT = 8
} posenc_isa;

typedef enum posenc_isa_source {
  POSENC_ISA_SOURCE_AUTO = 0,         /**< best available; POSENC_ISA unset or empty */
  POSENC_ISA_SOURCE_ENV = 1,          /**< POSENC_ISA named an available ISA */
  POSENC_ISA_SOURCE_ENV_FALLBACK = 2, /**< POSENC_ISA named an unavailable or unknown ISA;
                                            the best available one is used instead */
  POSENC_ISA_SOURCE_API = 3           /**< chosen by posenc_set_isa() */
} posenc_isa_source;

/** "scalar", "sse4", "avx2", "avx512", "neon", "avx512bf16", "sve", "rvv"; "unknown" for other
 * values. */
POSENC_API const char *posenc_isa_name(posenc_isa isa);

/** Parses a name as accepted in POSENC_ISA. Returns POSENC_ERR_INVALID_ARGUMENT for an
 * unknown name or a null pointer. */
POSENC_API posenc_status posenc_isa_from_name(const char *name, posenc_isa *isa);

/** 1 if this build of the library contains the variants for `isa`, else 0. */
POSENC_API int posenc_isa_compiled(posenc_isa isa);

/** 1 if `isa` is compiled in and this CPU and OS can run it, else 0. Scalar is always 1. */
POSENC_API int posenc_isa_available(posenc_isa isa);

/** The ISA whose variants the kernels use now. */
POSENC_API posenc_isa posenc_active_isa(void);

/** How the active ISA was chosen, and, when it came from POSENC_ISA, which ISA was asked
 * for (`requested` may be NULL; it is set to POSENC_ISA_COUNT for an unknown name and to
 * the active ISA when POSENC_ISA was not used). */
POSENC_API posenc_isa_source posenc_isa_selection(posenc_isa *requested);

/**@{*/
/** The CPU's brand string ("unknown" where the CPU gives none), and the features the
 * dispatcher looks at that this CPU and OS have, space-separated (e.g. "sse4.1 sse4.2 avx
 * fma f16c avx2 avx512f avx512dq avx512bw avx512vl avx512bf16 avx512fp16 os-ymm os-zmm", or
 * "neon sve sve2" on aarch64, "v" on riscv64 with the V extension usable). Static strings. */
POSENC_API const char *posenc_cpu_name(void);
POSENC_API const char *posenc_cpu_features(void);
/**@}*/

/** On aarch64 with SVE ("sve" in posenc_cpu_features()), the SVE vector length of the calling
 * thread in bits (128 to 2048); 0 without SVE. The sve tier's kernels run at this length
 * (the dispatch rule above leaves 128-bit vectors to neon when the ISA is chosen
 * automatically); posenc assumes a thread does not change it (prctl(PR_SVE_SET_VL)) while
 * it calls into the library. */
POSENC_API unsigned posenc_cpu_sve_vector_bits(void);

/** Makes `isa` the active ISA (for tests, benchmarks and users who know better). Returns
 * POSENC_ERR_UNSUPPORTED, and changes nothing, if it is not available. Safe to call while
 * other threads run kernels: each kernel call uses one variant from start to end, either
 * the one active before or the one active after the switch. */
POSENC_API posenc_status posenc_set_isa(posenc_isa isa);

/** The kernels of the dispatch table, one per operation and storage type, as
 * posenc_kernel_isa() reports them. */
typedef enum posenc_kernel {
  POSENC_KERNEL_ROPE_F32 = 0,      /**< RoPE on f32 rows (every form, M-RoPE, re-rotation) */
  POSENC_KERNEL_ROPE_BF16 = 1,     /**< bf16 rows */
  POSENC_KERNEL_ROPE_F16 = 2,      /**< f16 rows */
  POSENC_KERNEL_ROPE_F32_BF16 = 3, /**< f32 rows rotated into bf16 ones */
  POSENC_KERNEL_ROPE_F32_F16 = 4,  /**< f32 rows rotated into f16 ones */
  POSENC_KERNEL_SINUSOID_F32 = 5,  /**< sinusoid tables, fill and add (f32 fills of 16 MiB
                                        or more: POSENC_KERNEL_SINUSOID_F32_STREAMED) */
  POSENC_KERNEL_SINUSOID_BF16 = 6,
  POSENC_KERNEL_SINUSOID_F16 = 7,
  POSENC_KERNEL_ALIBI_F32 = 8, /**< ALiBi bias, write and add */
  POSENC_KERNEL_ALIBI_BF16 = 9,
  POSENC_KERNEL_ALIBI_F16 = 10,
  POSENC_KERNEL_SOFTMAX_F32 = 11, /**< posenc_softmax with f32 x and y (and its ALiBi forms) */
  POSENC_KERNEL_SOFTMAX_16 = 12,  /**< posenc_softmax with a bf16 or f16 x or y */
  POSENC_KERNEL_LEARNED_ADD_F32 = 13,
  POSENC_KERNEL_SINUSOID_F32_STREAMED = 14, /**< f32 sinusoid fills of 16 MiB or more (written
                                                 with non-temporal stores); the same variants
                                                 as sinusoid_f32, with a rule of their own
                                                 (above) */
  POSENC_KERNEL_COUNT = 15
} posenc_kernel;

/** "rope_f32", "rope_bf16", "rope_f16", "rope_f32_bf16", "rope_f32_f16", "sinusoid_f32",
 * "sinusoid_bf16", "sinusoid_f16", "alibi_f32", "alibi_bf16", "alibi_f16",
 * "softmax_f32", "softmax_16", "learned_add_f32", "sinusoid_f32_streamed"; "unknown"
 * otherwise. */
POSENC_API const char *posenc_kernel_name(posenc_kernel kernel);
/* The former names of the softmax kernels. */
#define POSENC_KERNEL_ALIBI_SOFTMAX_F32 POSENC_KERNEL_SOFTMAX_F32
#define POSENC_KERNEL_ALIBI_SOFTMAX_BF16 POSENC_KERNEL_SOFTMAX_16

/** The tier whose variant serves `kernel` now (see the rules above); POSENC_ISA_COUNT for
 * an unknown kernel. */
POSENC_API posenc_isa posenc_kernel_isa(posenc_kernel kernel);

/** The tier that would serve `kernel` with `isa` named by POSENC_ISA or posenc_set_isa():
 * `isa` itself, or the tier below it where `isa` has no variant of its own for the kernel
 * (avx512bf16's kernels other than bf16 RoPE are avx512's). Changes nothing. POSENC_ISA_COUNT for
 * an unknown kernel or an ISA that is not available. */
POSENC_API posenc_isa posenc_kernel_isa_for(posenc_kernel kernel, posenc_isa isa);

/** @} */

/* --------------------------------------------------------------------------------------- */
/** \defgroup rope RoPE: rotary position embedding
 *
 * A head vector has head_dim (D) elements; RoPE rotates its first rotary_dim (R, even,
 * R <= D) elements as R/2 pairs and leaves elements [R, D) untouched.
 *
 * Pairs (flags select the layout):
 *  - POSENC_ROPE_NEOX (default; "rotate half"; GPT-NeoX, LLaMA in HF transformers):
 *      pair i is (x[i], x[i + R/2]).
 *  - POSENC_ROPE_GPTJ (interleaved; GPT-J, original LLaMA, MLX "traditional"):
 *      pair i is (x[2i], x[2i + 1]).
 * Pair i at position p is rotated by the angle a = p * w_i, where w_i is the plan's
 * frequency of pair i; with c = att * cos(a) and s = att * sin(a) (att: the plan's
 * attention factor):
 *      u' = u*c - v*s,   v' = v*c + u*s         (forward)
 *      u' = u*c + v*s,   v' = v*c - u*s         (POSENC_ROPE_INVERSE: the backward pass, or
 *                                                un-rotating cached keys; exact inverse for
 *                                                att = 1)
 *
 * Angle accuracy (POSENC_ROPE_ACCURATE, the default): for every position p with
 * |p| < 2^31, the c and s used differ from att*cos and att*sin of the exact real product
 * p * w_i (w_i the plan's double) by at most 2^-22 * att (absolute). The product is formed
 * exactly (as turns, from parts of w_i / 2pi short enough that each partial product is
 * exact in double) and reduced modulo one turn before SLEEF's u10 float sincos. The SIMD
 * variants compute so only the anchors, positions a that are multiples of 64, and form the
 * cos/sin of a + k (0 <= k < 64) by angle addition in double with the plan's exact cos/sin
 * of k w_i (plans of R <= 512; larger plans compute every position afresh). Measured worst
 * case on every variant: 1.5e-7 (README, "Accuracy").
 *
 * Split invariance (every mode, every ISA, every storage type): the cos/sin of a position
 * depend only on the position, the plan, the flags and the ISA, never on the other tokens of
 * the call. So a token's result is bitwise the same whatever the call's token range and
 * start, however a prefill is split across threads or calls, with a position array or
 * start_pos, in a prefill or a decode step, in place, out of place or through rotation
 * factors (posenc_rope_out, posenc_rope_apply), and in M-RoPE and re-rotation.
 *
 * POSENC_ROPE_DETERMINISTIC: results bitwise identical on every ISA (scalar, SSE4, AVX2,
 * AVX-512, NEON, SVE, RVV) and every CPU, for the same plan frequencies, inputs and flags: cos/sin
 * by one fixed sequence of IEEE double operations (the exact angle reduction above, then posenc's
 * own reduction by pi and polynomial: no libm, no fused multiply-add; within 2^-22 of the exact
 * values, measured 3.2e-8), each rounded to float, and the rotation in float with every product
 * rounded (u*c - v*s, no fused multiply-add), in the scalar variant too. Combines with every other
 * flag and form. The frequencies of posenc_rope_plan_create come from the C library's pow
 * (correctly rounded by glibc in every case tested: the golden digests of
 * tests/deterministic_test.cc hold on x86-64 with and without FMA and on aarch64); plans made from
 * given frequencies carry no such caveat. A NaN result is a NaN everywhere, its payload
 * unspecified.
 *
 * POSENC_ROPE_F32_ANGLES reproduces the float32 recipe of most reference code instead
 * (inv_freq = (float)w_i, angle = (float)p * inv_freq rounded to float); its cos/sin are
 * within 2^-22 of cos/sin of that float angle. The angles are a reference's bit for bit when
 * the plan's float frequencies are its own: see the float32 recipes
 * (posenc_rope_plan_create_hf_f32, _powf, _from_freqs_f32). Beware: that angle itself is off
 * by ~1e-2 rad at p = 131072.
 *
 * Variants: every SIMD variant's output is within POSENC_ROPE_SIMD_TOLERANCE *
 * att * (|u| + |v|) + 2^-147 of the scalar variant's output for the same element (measured
 * worst: 2.9e-7, i.e. about 2^-21.7; the absolute term covers subnormal results). The scalar
 * reference rotates in double, the SIMD variants in float: where att * (|u| + |v|) reaches
 * 2^126, a SIMD variant may overflow to infinity where the reference stays finite.
 * @{
 */

#define POSENC_ROPE_SIMD_TOLERANCE 9.5367431640625e-07 /**< 2^-20 */

enum {
  POSENC_ROPE_NEOX = 0u,              /**< rotate-half pairs (default) */
  POSENC_ROPE_GPTJ = 1u,              /**< interleaved pairs */
  POSENC_ROPE_INVERSE = 2u,           /**< rotate by -angle */
  POSENC_ROPE_ACCURATE = 0u,          /**< accurate angles (default) */
  POSENC_ROPE_F32_ANGLES = 4u,        /**< float32-compatible angles */
  POSENC_ROPE_MROPE_INTERLEAVED = 8u, /**< posenc_mrope_*: Qwen3-VL's interleaved sections */
  POSENC_ROPE_DETERMINISTIC = 16u,    /**< bitwise identical results on every ISA and CPU */
  /** posenc_mrope_*: ggml's M-RoPE, four sections and four position rows (see posenc_mrope_f32) */
  POSENC_ROPE_MROPE_GGML = 32u,
  /** The positions argument points to int64_t values (vLLM's, FlashInfer's): pass
   * (const int32_t *)positions64. Each must lie in the int32 range, else
   * POSENC_ERR_INVALID_ARGUMENT naming the argument and the first value outside it, nothing
   * written; the values are narrowed to int32 (not wrapped), so the result is bitwise that of
   * the same call with int32 positions. Taken by every function with RoPE positions:
   * posenc_rope_f32 / _bf16 / _f16, posenc_mrope_* (all 3, or 4, rows int64),
   * posenc_rope_rerotate_* (both from_positions and to_positions), posenc_rope_out,
   * posenc_mrope_out, posenc_rope_out_slots, _q8_0, _fp8, posenc_rope_qknorm and the two
   * factor computations; a no-op for posenc_rope_factors_bytes, posenc_rope_apply and
   * posenc_rope_apply_slots (by the factor path's rule), and with NULL positions (start_pos
   * as before). More than 64 positions take a heap copy: POSENC_ERR_OUT_OF_MEMORY if it
   * cannot be allocated. */
  POSENC_ROPE_POSITIONS_INT64 = 64u
};

/** A frequency plan: R/2 frequencies (double) and an attention factor. Immutable once
 * created; one plan may be used by any number of threads at once. */
typedef struct posenc_rope_plan posenc_rope_plan;

/** The default plan: w_i = base^(-2i/R), i in [0, R/2), computed in double.
 * rotary_dim: even, >= 2, <= 2^20. base: finite, > 0, != 1, every w_i within the limit of
 * posenc_rope_plan_create_from_freqs (10000 for most models, 500000 for Llama 3, 1e6 for
 * Qwen2). attention_factor: > 0 and <= FLT_MAX (1 unless a scaling says otherwise).
 * *plan receives a new plan, or NULL on error. */
POSENC_API posenc_status posenc_rope_plan_create(posenc_rope_plan **plan, size_t rotary_dim,
                                                 double base, double attention_factor);

/** A plan from R/2 given frequencies (radians per position, |w| <= 1024; may be 0 or
 * negative). Beyond 1024 the exact angle reduction could not keep its 2^-22 contract; no
 * model uses more than 1. Every scaling type reduces to this. */
POSENC_API posenc_status posenc_rope_plan_create_from_freqs(posenc_rope_plan **plan,
                                                            size_t rotary_dim, const double *freqs,
                                                            double attention_factor);

/** Frees a plan; NULL is a no-op. */
POSENC_API void posenc_rope_plan_destroy(posenc_rope_plan *plan);

/**@{*/
/** The plan's rotary_dim (0 for NULL), attention factor (0 for NULL), and its R/2
 * frequencies copied to `freqs`. */
POSENC_API size_t posenc_rope_plan_rotary_dim(const posenc_rope_plan *plan);
POSENC_API double posenc_rope_plan_attention_factor(const posenc_rope_plan *plan);
POSENC_API posenc_status posenc_rope_plan_freqs(const posenc_rope_plan *plan, double *freqs);
/**@}*/

/** How a scaled plan derives its frequencies and attention factor: one type per `rope_type`
 * of HuggingFace transformers' modeling_rope_utils (formulas as there, evaluated in double),
 * plus two that HF has no type for. With w_i = base^(-2i/R):
 *  - DEFAULT:   w_i.
 *  - LINEAR:    w_i / factor.
 *  - DYNAMIC:   w_i of base' = base * (factor * s / M - (factor - 1))^(R/(R-2)) with
 *               M = max_position_embeddings and s = seq_len; for s <= M (or seq_len 0)
 *               exactly the default plan. Needs R >= 4.
 *  - YARN:      w_i for the pairs up to where L * w_i / (2 pi) = beta_fast turns, w_i / factor
 *               from where it is beta_slow turns, linear in the pair index between (the
 *               bounds rounded outward unless no_truncate; L = original_max_position_embeddings).
 *               Attention factor 0.1 * ln(factor) + 1 (1 for factor <= 1), or with mscale and
 *               mscale_all_dim both given (m(k) = 0.1 * k * ln(factor) + 1):
 *               m(mscale) / m(mscale_all_dim).
 *  - LONGROPE:  w_i / long_factor[i] when seq_len > original_max_position_embeddings, else
 *               w_i / short_factor[i]. Attention factor sqrt(1 + ln(factor) / ln(L)) (1 for
 *               factor <= 1), for both sets.
 *  - LLAMA3:    wavelength l_i = 2 pi / w_i; l_i < L / high_freq_factor: w_i;
 *               l_i > L / low_freq_factor: w_i / factor; between: (1 - t) w_i / factor + t w_i
 *               with t = (L / l_i - low_freq_factor) / (high_freq_factor - low_freq_factor).
 *  - NTK_ALPHA: fixed NTK-aware scaling: w_i of base' = base * alpha^(R/(R-2)). Needs R >= 4.
 *  - PAIR_FACTORS: w_i / pair_factors[i] (user-supplied per-pair factors; for user-supplied
 *               frequencies use posenc_rope_plan_create_from_freqs).
 * A given attention_factor (> 0) replaces the type's own, for every type.
 *
 * From a HF config: R = int(head_dim * partial_rotary_factor), base = rope_theta, and the
 * `rope_scaling` (or `rope_parameters`) dict maps field by field, same names:
 *   absent, "default"             {.type = POSENC_ROPE_SCALING_DEFAULT}
 *   {"type": "linear", "factor"}  {LINEAR, .factor}
 *   {"type": "dynamic", "factor"} {DYNAMIC, .factor, .max_position_embeddings = the config's,
 *                                  .seq_len = largest position + 1}: HF recomputes the
 *                                  frequencies as the sequence grows; build a new plan then
 *   {"type": "yarn", ...}         {YARN, .factor, .original_max_position_embeddings,
 *                                  .beta_fast, .beta_slow, .mscale, .mscale_all_dim,
 *                                  .attention_factor, .no_truncate = !truncate}
 *   {"type": "longrope" or "su",  {LONGROPE, .short_factor, .long_factor (+ _len),
 *    ...}                          .original_max_position_embeddings (Phi-3 keeps it outside
 *                                  rope_scaling), .max_position_embeddings, .factor,
 *                                  .attention_factor, .seq_len = largest position + 1}
 *   {"rope_type": "llama3", ...}  {LLAMA3, .factor, .low_freq_factor, .high_freq_factor,
 *                                  .original_max_position_embeddings}
 * Pair layout: POSENC_ROPE_NEOX for Llama, Qwen, Mistral, Phi-3, GPT-NeoX (HF's rotate_half);
 * POSENC_ROPE_GPTJ for GPT-J and DeepSeek-V2 (HF's interleaved / complex pairs).
 * DeepSeek's softmax scale additionally carries m(mscale_all_dim)^2, outside RoPE.
 * The README's "Supported models" table lists tested configurations
 * (tests/data/hf_rope_golden.txt, generated by tests/data/hf_rope_golden.py from HF itself):
 * frequencies agree with HF's evaluated in float64 to 1e-14 (relative). HF itself rounds
 * inv_freq to float32 in its own arithmetic, which can differ from (float)w_i, the float
 * frequency of POSENC_ROPE_F32_ANGLES, by an ulp: for angle-exact agreement with a float32
 * reference, pass its float32 inv_freq to posenc_rope_plan_create_from_freqs. */
typedef enum posenc_rope_scaling_type {
  POSENC_ROPE_SCALING_DEFAULT = 0,     /**< HF "default" */
  POSENC_ROPE_SCALING_LINEAR = 1,      /**< HF "linear" (position interpolation) */
  POSENC_ROPE_SCALING_DYNAMIC = 2,     /**< HF "dynamic" (dynamic NTK) */
  POSENC_ROPE_SCALING_YARN = 3,        /**< HF "yarn" */
  POSENC_ROPE_SCALING_LONGROPE = 4,    /**< HF "longrope" (earlier "su") */
  POSENC_ROPE_SCALING_LLAMA3 = 5,      /**< HF "llama3" */
  POSENC_ROPE_SCALING_NTK_ALPHA = 6,   /**< fixed NTK-aware base scaling by alpha */
  POSENC_ROPE_SCALING_PAIR_FACTORS = 7 /**< user-supplied per-pair factors */
} posenc_rope_scaling_type;

/** The parameters of a scaling, named after HF's keys. Zero-initialise it and set what the
 * type reads: 0 or NULL means "not given" and takes HF's default. Fields the type does not
 * read are ignored. */
typedef struct posenc_rope_scaling {
  posenc_rope_scaling_type type;
  /** LINEAR, DYNAMIC, LLAMA3: required. YARN: 0 -> max_position_embeddings /
   * original_max_position_embeddings. LONGROPE: used only for the default attention factor;
   * 0 -> that same ratio. */
  double factor;
  /** Every type: 0 -> the type's own (see above); else used as is (> 0, <= FLT_MAX). */
  double attention_factor;
  /** YARN, LONGROPE, LLAMA3: required, the pretraining context L. */
  size_t original_max_position_embeddings;
  /** DYNAMIC: required (the config's max_position_embeddings). YARN, LONGROPE: only read to
   * derive a factor that is 0. */
  size_t max_position_embeddings;
  /** DYNAMIC, LONGROPE: the current sequence length, HF's max(position_ids) + 1; 0: not known
   * (DYNAMIC: no scaling; LONGROPE: the short factors, as HF without a length). */
  size_t seq_len;
  double beta_fast;           /**< YARN: 0 -> 32 */
  double beta_slow;           /**< YARN: 0 -> 1 */
  double mscale;              /**< YARN: 0 -> not given */
  double mscale_all_dim;      /**< YARN: 0 -> not given */
  int no_truncate;            /**< YARN: nonzero for HF's "truncate": false (gpt-oss) */
  double low_freq_factor;     /**< LLAMA3: required, > 0 */
  double high_freq_factor;    /**< LLAMA3: required, > low_freq_factor */
  const double *short_factor; /**< LONGROPE: required, short_factor_len = R/2 factors */
  size_t short_factor_len;
  const double *long_factor; /**< LONGROPE: required, long_factor_len = R/2 factors */
  size_t long_factor_len;
  double alpha;               /**< NTK_ALPHA: required */
  const double *pair_factors; /**< PAIR_FACTORS: required, pair_factors_len = R/2 factors */
  size_t pair_factors_len;
} posenc_rope_scaling;

/** A plan for a scaled RoPE: posenc_rope_plan_create's frequencies for rotary_dim and base,
 * transformed as `scaling` says (NULL: the default plan). Its attention factor
 * (posenc_rope_plan_attention_factor) is the one HF applies to cos and sin.
 * Errors (*plan = NULL, nothing allocated): POSENC_ERR_INVALID_ARGUMENT for what
 * posenc_rope_plan_create refuses, an unknown type, a required field missing, and every
 * parameter the type reads that is NaN or infinite, a factor, alpha or length <= 0, a
 * factor array that is NULL or whose length is not R/2 or that holds a value <= 0,
 * low_freq_factor >= high_freq_factor, beta_fast < beta_slow (after their defaults; HF
 * only warns), R = 2 for DYNAMIC and NTK_ALPHA, and any resulting
 * frequency or attention factor the plan cannot hold (as posenc_rope_plan_create_from_freqs);
 * POSENC_ERR_OUT_OF_MEMORY. */
POSENC_API posenc_status posenc_rope_plan_create_scaled(posenc_rope_plan **plan, size_t rotary_dim,
                                                        double base,
                                                        const posenc_rope_scaling *scaling);

/** The rope parameters of llama.cpp / GGUF, as passed to ggml's ggml_rope_ext (llama.cpp
 * derives them from the GGUF keys rope.dimension_count, rope.freq_base,
 * rope.scaling.factor (freq_scale = 1 / factor), rope.scaling.original_context_length and
 * the YaRN keys). posenc_rope_plan_create_ggml builds the plan that rotates as ggml's rope
 * does with these arguments (its YaRN recipe, evaluated in double): with
 * theta_scale = freq_base^(-2/n_dims) and w_i = theta_scale^i / freq_factors[i] (1 without),
 *     w'_i = w_i * (freq_scale * (1 - m_i) + m_i),   m_i = ramp(i) * ext_factor
 *     ramp(i) = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1)
 *     lo = max(0, floor(c(beta_fast))), hi = min(n_dims - 1, ceil(c(beta_slow))),
 *     c(b) = n_dims * ln(n_ctx_orig / (2 pi b)) / (2 ln(freq_base))
 * and attention factor attn_factor, times 1 + 0.1 ln(1 / freq_scale) when ext_factor != 0.
 * Zero-initialise and set: n_dims (R), freq_base, freq_scale (0 -> 1), attn_factor
 * (0 -> 1); ext_factor, beta_fast, beta_slow and n_ctx_orig are read only when ext_factor
 * != 0 (llama.cpp passes 0 unless the model uses YaRN). The plan's pair layout is the
 * caller's flag (posenc_rope_ggml_flags, or posenc_rope_plan_create_ggml_mode, which gives
 * both): ggml's GGML_ROPE_TYPE_NEOX is POSENC_ROPE_NEOX, its normal mode POSENC_ROPE_GPTJ.
 *
 * mode is ggml's (GGML_ROPE_TYPE_*, compared whole as ggml does): 0 NORMAL, 2 NEOX, 8 MROPE,
 * 40 IMROPE and 24 VISION; sections are ggml's four M-RoPE sections (pairs per position row:
 * t, h, w, e; GGUF's rope.dimension_sections), read for the three M-RoPE modes and 0 in the
 * others. The M-RoPE modes record mode and sections in the plan: posenc_mrope_* then require
 * POSENC_ROPE_MROPE_GGML, the same sections and the mode's pair assignment, and the
 * one-position forms (posenc_rope_f32, posenc_rope_out, ...) refuse the plan (ggml rotates
 * with four position rows, and llama.cpp's text tokens have a fourth row of 0, so one position
 * does not give ggml's rotation). VISION (ggml's vision encoders, ggml_rope_multi with
 * n_dims = head_dim / 2): the plan rotates R = 2 n_dims dimensions, pairs (i, i + n_dims) for
 * i in [0, n_dims) with POSENC_ROPE_NEOX, and each section's frequencies start again from
 * freq_base^0 (ggml's independent sections: pair i's w_i is theta_scale^(i - start) for the
 * start of its section, ggml's sequence of section restarts reproduced, and YaRN's ramp at i),
 * so freq_factors, if any, holds n_dims values there. */
typedef struct posenc_rope_ggml_params {
  size_t n_dims;             /**< rotated dimensions R (even, as posenc_rope_plan_create) */
  double freq_base;          /**< rope.freq_base (10000, 500000, ...) */
  double freq_scale;         /**< 1 / rope.scaling.factor; 0 -> 1 */
  double ext_factor;         /**< YaRN extrapolation mix, 0 (off) to 1 */
  double attn_factor;        /**< 0 -> 1 */
  double beta_fast;          /**< YaRN, read when ext_factor != 0 (llama.cpp: 32) */
  double beta_slow;          /**< YaRN, read when ext_factor != 0 (llama.cpp: 1) */
  size_t n_ctx_orig;         /**< YaRN, read when ext_factor != 0: original context */
  const float *freq_factors; /**< optional, n_dims / 2 divisors (> 0), ggml's rope_freqs
                                  (n_dims with VISION) */
  int mode;                  /**< ggml's rope mode: 0, 2, 8, 24 or 40 (above) */
  int sections[4];           /**< ggml's M-RoPE sections (modes 8, 24, 40), else 0 */
} posenc_rope_ggml_params;

/** A plan from ggml rope parameters (above). Errors (*plan = NULL): POSENC_ERR_INVALID_ARGUMENT
 * for a NULL params, what posenc_rope_plan_create refuses for n_dims (with VISION for
 * 2 n_dims) and freq_base, a NaN, infinite or negative parameter, freq_scale or attn_factor
 * not > 0 after the defaults, ext_factor != 0 with n_ctx_orig 0 or beta_fast or beta_slow
 * <= 0, a freq_factor that is not finite and > 0, a mode ggml does not define, sections not
 * 0 in the modes 0 and 2, M-RoPE sections that are negative or above 2^20 or whose first
 * three are all 0 (ggml asserts), or resulting frequencies / attention factor a plan cannot
 * hold; POSENC_ERR_OUT_OF_MEMORY. */
POSENC_API posenc_status posenc_rope_plan_create_ggml(posenc_rope_plan **plan,
                                                      const posenc_rope_ggml_params *params);

/** posenc_rope_plan_create_ggml, and in *flags the posenc flags that rotate as params->mode
 * does (posenc_rope_ggml_flags): the two steps a llama.cpp port needs, in one call. Errors:
 * those of posenc_rope_plan_create_ggml and a NULL flags (*plan = NULL, *flags unchanged). */
POSENC_API posenc_status posenc_rope_plan_create_ggml_mode(posenc_rope_plan **plan,
                                                           const posenc_rope_ggml_params *params,
                                                           unsigned *flags);

/** The posenc flags that rotate as ggml's rope `mode` (ggml_rope_ext's mode argument,
 * llama.cpp's rope type) does: the two are different numbers (ggml's NEOX, 2, is
 * POSENC_ROPE_INVERSE), so a mode passed as flags rotates silently wrong. ggml compares the
 * whole mode with its GGML_ROPE_TYPE_* values, as this does:
 *  - GGML_ROPE_TYPE_NORMAL (0): POSENC_ROPE_GPTJ (adjacent pairs);
 *  - GGML_ROPE_TYPE_NEOX (2): POSENC_ROPE_NEOX (rotate-half pairs);
 *  - GGML_ROPE_TYPE_MROPE (8): POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_GGML, for posenc_mrope_*
 *    with ggml's four sections and four position rows;
 *  - GGML_ROPE_TYPE_VISION (24): POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_GGML, the same, with a
 *    plan of that mode (posenc_rope_plan_create_ggml: its frequencies and R = 2 n_dims);
 *  - GGML_ROPE_TYPE_IMROPE (40): POSENC_ROPE_NEOX | POSENC_ROPE_MROPE_INTERLEAVED |
 *    POSENC_ROPE_MROPE_GGML, the same.
 * Errors (*flags unchanged): POSENC_ERR_INVALID_ARGUMENT for a NULL flags and for a mode
 * ggml does not define (ggml aborts on those). */
POSENC_API posenc_status posenc_rope_ggml_flags(int mode, unsigned *flags);

/**@{*/
/** Float32 recipes: plans whose frequencies are, bit for bit, the float32 inverse
 * frequencies of common reference code, so that with POSENC_ROPE_F32_ANGLES every angle,
 * (float)p * inv_freq_i rounded to float, is that code's angle exactly (and in the accurate
 * mode the exact angle of those frequencies). What is not reproduced: the sin and cos of the
 * same float angle, which another library may round an ulp apart (posenc's are within 2^-22).
 *  - posenc_rope_plan_create_from_freqs_f32: given float32 frequencies, w_i = freqs[i]
 *    (a model's own `inv_freq` buffer, a runtime's table); |w| <= 1024 as for
 *    posenc_rope_plan_create_from_freqs.
 *  - posenc_rope_plan_create_powf: w_i = 1.0f / powf(base, (float)(2i) / (float)R) in float
 *    with this C library's powf, as small C runtimes compute it (llama2.c and its kin):
 *    bitwise theirs when they run on the same C library.
 *  - posenc_rope_plan_create_hf_f32: HF transformers' float32 `inv_freq` for the default
 *    type and every type HF computes in float32 (LINEAR, DYNAMIC, YARN, LONGROPE, LLAMA3;
 *    `scaling` as for posenc_rope_plan_create_scaled, NULL for the default), operation by
 *    operation as torch evaluates HF's code on a CPU: a Python scalar meeting a float32
 *    tensor is rounded to float32 first, and `base ** t` is PyTorch's CPU pow, which depends
 *    on the kernels torch picked (torch.backends.cpu.get_cpu_capability()): ATen's vectorised
 *    loop takes whole blocks of 2 x torch_vector_floats pairs through SLEEF's u10 powf with
 *    fused multiply-adds and the remaining pairs through the C library's powf.
 *    torch_vector_floats: 16 for torch's AVX512 capability (its default on AVX-512 CPUs), 8
 *    for AVX2, 4 for aarch64 NEON, 0 for "default" (every pair by powf); other values are
 *    refused. The capabilities differ only where R/2 is not a multiple of the block (e.g.
 *    R = 48, 160, 200). Checked against frequencies produced by transformers itself under
 *    each capability (tests/data/hf_rope_golden.txt, tests/data/hf_f32_pow_golden.txt: the
 *    README says which versions). Not reproduced: torch on a GPU (another pow), and DYNAMIC
 *    between HF's recomputations (give seq_len as for create_scaled). The attention factor
 *    is posenc_rope_plan_create_scaled's. POSENC_ERR_UNSUPPORTED on an x86 CPU without FMA
 *    when some pair goes through SLEEF; NTK_ALPHA and PAIR_FACTORS (no HF type) are
 *    POSENC_ERR_INVALID_ARGUMENT.
 * Errors otherwise as posenc_rope_plan_create_from_freqs / _create / _create_scaled
 * (*plan = NULL). */
POSENC_API posenc_status posenc_rope_plan_create_from_freqs_f32(posenc_rope_plan **plan,
                                                                size_t rotary_dim,
                                                                const float *freqs,
                                                                double attention_factor);
POSENC_API posenc_status posenc_rope_plan_create_powf(posenc_rope_plan **plan, size_t rotary_dim,
                                                      float base, double attention_factor);
POSENC_API posenc_status posenc_rope_plan_create_hf_f32(posenc_rope_plan **plan, size_t rotary_dim,
                                                        double base,
                                                        const posenc_rope_scaling *scaling,
                                                        unsigned torch_vector_floats);
/**@}*/

/** A strided view of head vectors: element d of head h of token t is at
 *     data[t * token_stride + h * head_stride + d],  d in [0, head_dim).
 *   [L, H, D] contiguous:      token_stride = H*D, head_stride = D
 *   [H, L, D] contiguous:      token_stride = D,   head_stride = L*D
 *   packed QKV rows [L, (Hq + 2*Hk) * D]: Q: data = qkv,         token_stride = (Hq+2Hk)*D,
 *                                         K: data = qkv + Hq*D,  same strides, head_stride D
 * The head vectors of one view must not overlap each other (heads nested in tokens or
 * tokens in heads, the smaller stride >= head_dim). A K view must not share elements with
 * the Q view; views whose address ranges intersect are accepted when they have the same
 * token_stride and each token's Q heads and K heads lie in disjoint parts of that stride
 * (packed QKV rows), and rejected otherwise, even if interleaved without overlapping.
 * `data` needs only element (not vector) alignment. */
typedef struct posenc_rope_tensor {
  void *data; /**< float* for posenc_rope_f32, uint16_t* for posenc_rope_bf16 / _f16 */
  size_t n_heads;
  size_t token_stride;
  size_t head_stride;
} posenc_rope_tensor;

/** Rotates, in place, the first R elements of every head vector of q and, in the same pass,
 * of k (k may be NULL; it may have its own head count, for GQA/MQA). cos/sin are computed
 * once per token and pair and shared by all heads of q and k.
 *
 * Positions: token t is at positions[t], or, if positions is NULL, at start_pos + t
 * (start_pos + n_tokens - 1 must not exceed INT32_MAX). Negative positions are valid.
 * head_dim: D, with R <= D (R = the plan's rotary_dim); elements [R, D) are untouched.
 * flags: POSENC_ROPE_NEOX or POSENC_ROPE_GPTJ, optionally | POSENC_ROPE_INVERSE and
 * | POSENC_ROPE_F32_ANGLES. n_tokens = 0 or n_heads = 0 is a valid no-op.
 *
 * Errors (nothing written): POSENC_ERR_INVALID_ARGUMENT for a NULL plan or q, NULL data
 * with work to do, unknown flags, R > D, a head stride < D with more than one head,
 * overlapping head vectors within or between q and k, a view whose extent overflows
 * size_t or ptrdiff_t, start_pos + n_tokens - 1 > INT32_MAX. */
POSENC_API posenc_status posenc_rope_f32(const posenc_rope_plan *plan, size_t head_dim,
                                         size_t n_tokens, const int32_t *positions,
                                         int32_t start_pos, const posenc_rope_tensor *q,
                                         const posenc_rope_tensor *k, unsigned flags);

/**@{*/
/** posenc_rope_f32 on head vectors stored as bf16 (bfloat16: the upper half of a float) or
 * f16 (IEEE 754 binary16), each element a uint16_t holding those bits (2-byte aligned;
 * strides counted in elements). Arguments, flags (NEOX / GPTJ, INVERSE, F32_ANGLES),
 * positions and errors exactly as for posenc_rope_f32 (nothing written on error).
 *
 * Each element is widened to float exactly (f16 subnormals included), the pair is rotated
 * in float as by posenc_rope_f32, and the result is rounded once to the storage type, to
 * nearest with ties to even: f16 results of magnitude 65520 or more become infinity of
 * their sign (IEEE overflow), results below 2^-14 become f16 subnormals (or zero) exactly
 * rounded; a NaN stays a NaN (quiet, payload unspecified). Elements [R, D) and every
 * element outside the views are untouched, as for posenc_rope_f32.
 *
 * Accuracy: every rotated element equals, bit for bit (NaN where it is NaN), the
 * posenc_rope_f32 result of the same ISA on the widened input, rounded to the storage type.
 * So it is within half an ulp of the storage type (2^-8 relative for bf16, 2^-11 for f16,
 * and 2^-25 absolute among f16 subnormals) of that f32 result, whose own bounds are stated
 * above; two ISAs' results differ by at most the f32 bound plus one ulp of the storage
 * type. Forward then POSENC_ROPE_INVERSE with att = 1 returns each element to within three
 * ulps of the storage type at max(|u|, |v|) (the rounding of both members of the pair,
 * rotated back, then the inverse's own), plus the f32 rotation's error.
 * Conversions: F16C / AVX-512 instructions (VCVTPH2PS, VCVTPS2PH) on the avx2 and avx512
 * tiers, FCVTL / FCVTN on neon, FCVT on sve, exact integer operations on sse4, rvv and scalar; bf16
 * with integer operations everywhere. */
POSENC_API posenc_status posenc_rope_bf16(const posenc_rope_plan *plan, size_t head_dim,
                                          size_t n_tokens, const int32_t *positions,
                                          int32_t start_pos, const posenc_rope_tensor *q,
                                          const posenc_rope_tensor *k, unsigned flags);
POSENC_API posenc_status posenc_rope_f16(const posenc_rope_plan *plan, size_t head_dim,
                                         size_t n_tokens, const int32_t *positions,
                                         int32_t start_pos, const posenc_rope_tensor *q,
                                         const posenc_rope_tensor *k, unsigned flags);
/**@}*/

/**@{*/
/** Multimodal RoPE (M-RoPE) of Qwen2-VL / Qwen2.5-VL and, with
 * POSENC_ROPE_MROPE_INTERLEAVED, Qwen3-VL: every token has three positions (temporal,
 * height, width; equal for text tokens) and each pair takes its angle from one of them.
 * sections[3] = HF's `mrope_section` (pairs per position; their sum must be R/2):
 *  - contiguous (default, Qwen2-VL): pairs [0, s0) take the temporal position,
 *    [s0, s0 + s1) the height, [s0 + s1, R/2) the width;
 *  - POSENC_ROPE_MROPE_INTERLEAVED (Qwen3-VL): pair i takes the height if i % 3 == 1 and
 *    i < 3 s1, the width if i % 3 == 2 and i < 3 s2, else the temporal position (so
 *    3 s1 - 2 and 3 s2 - 1 must be < R/2 where s1, s2 > 0, which gives each its s pairs).
 * positions: 3 rows of n_tokens, HF's position_ids (3, batch, seq) for one sequence:
 * token t is at positions[t] (temporal), positions[n_tokens + t] (height) and
 * positions[2 * n_tokens + t] (width). Pair i at its position p is then rotated exactly as
 * by posenc_rope_f32 / _bf16 / _f16 at p (the same flags, attention factor, views, storage
 * types, accuracy and variant bounds); a token whose three positions are equal costs what
 * a posenc_rope token costs, one with distinct positions computes cos/sin for each position
 * that differs from the previous token's in the same row.
 * flags: those of posenc_rope_f32 | POSENC_ROPE_MROPE_INTERLEAVED | POSENC_ROPE_MROPE_GGML.
 *
 * POSENC_ROPE_MROPE_GGML: ggml's M-RoPE (ggml_rope_multi; llama.cpp's Qwen2-VL, Qwen3-VL and
 * their vision encoders), which HF's differs from: sections then has FOUR entries s0..s3 and
 * positions FOUR rows (t, h, w, e: ggml's layout; llama.cpp gives text tokens t = h = w = p
 * and e = 0), and pair i takes the row of its sector c = i mod (s0 + s1 + s2 + s3) as
 * ggml_mrope_cache_init does:
 *  - contiguous: t for c < s0, h below s0 + s1, w below s0 + s1 + s2, else e;
 *  - POSENC_ROPE_MROPE_INTERLEAVED (ggml's IMROPE): h if c % 3 == 1 and c < 3 s1, w if
 *    c % 3 == 2 and c < 3 s2, t if c % 3 == 0 and c < 3 s0, else e (so with Qwen3-VL's
 *    {24, 20, 20, 0} pairs 61 and 62 take e, where HF's rule gives them t).
 * The sections need not sum to R/2 (each at most 2^20; s0 + s1 + s2 > 0). A plan made by
 * posenc_rope_plan_create_ggml with an M-RoPE mode requires this flag, its own sections and
 * the interleaving of its mode.
 * Errors (nothing written): those of posenc_rope_f32, plus NULL sections, NULL positions
 * with n_tokens > 0, sections that do not sum to R/2 or (interleaved) do not fit (ggml's
 * rule: sections as above), a plan of a ggml M-RoPE mode without POSENC_ROPE_MROPE_GGML,
 * with other sections or another interleaving. */
POSENC_API posenc_status posenc_mrope_f32(const posenc_rope_plan *plan, const size_t sections[3],
                                          size_t head_dim, size_t n_tokens,
                                          const int32_t *positions, const posenc_rope_tensor *q,
                                          const posenc_rope_tensor *k, unsigned flags);
POSENC_API posenc_status posenc_mrope_bf16(const posenc_rope_plan *plan, const size_t sections[3],
                                           size_t head_dim, size_t n_tokens,
                                           const int32_t *positions, const posenc_rope_tensor *q,
                                           const posenc_rope_tensor *k, unsigned flags);
POSENC_API posenc_status posenc_mrope_f16(const posenc_rope_plan *plan, const size_t sections[3],
                                          size_t head_dim, size_t n_tokens,
                                          const int32_t *positions, const posenc_rope_tensor *q,
                                          const posenc_rope_tensor *k, unsigned flags);
/**@}*/

/**@{*/
/** Re-rotates cached keys (any rotated head vectors) in one pass: a head vector of token t
 * that holds x rotated by (plan `from`, position p_t) afterwards holds the same x rotated by
 * (plan `to`, position p'_t). Pair i is rotated by the angle
 *      a = p'_t * w'_i - p_t * w_i      (w, w': the two plans' frequencies)
 * with c = r cos(a), s = r sin(a), r = att' / att (the plans' attention factors), as in
 * posenc_rope_f32's forward formula. Uses:
 *  - a context shift (StreamingLLM, llama.cpp's K-shift): from = to, p' = p - n_discarded;
 *  - a new frequency set for the same positions: LongRoPE's short factors to its long ones
 *    when the sequence passes original_max_position_embeddings, a dynamic-NTK plan for a
 *    new sequence length (any two plans with the same rotary_dim).
 * One pass reads and writes each element once and forms one sincos per token and pair
 * (shared by every head; reused while p' - p stays constant under one plan), where undoing
 * and redoing the rotation would take two passes (and, for 16-bit storage, two roundings).
 *
 * Positions: token t moves from from_positions[t] (NULL: from_start + t) to
 * to_positions[t] (NULL: to_start + t). flags: POSENC_ROPE_NEOX or POSENC_ROPE_GPTJ,
 * optionally | POSENC_ROPE_F32_ANGLES (each plan's float32-recipe angle, as posenc_rope_f32
 * would use; each reduced exactly in double, then their difference). POSENC_ROPE_INVERSE is
 * refused: swap the plans and positions instead.
 *
 * Accuracy (accurate angles): where both plans have the same frequencies and
 * |p' - p| < 2^31, a is the angle of position p' - p, formed exactly; otherwise both angles
 * are reduced exactly as posenc_rope_f32 reduces them and their difference reduced again
 * (adding < 2^-50 rad). Either way c and s are within 2^-22 * r of r cos(a) and r sin(a) of
 * the exact a, the contract of posenc_rope_f32 with att replaced by r (with
 * POSENC_ROPE_F32_ANGLES: of the difference of the two float32 angles), and every SIMD
 * variant is within POSENC_ROPE_SIMD_TOLERANCE * r * (|u| + |v|) + 2^-147 of the scalar
 * one. 16-bit storage: the f32 result of the same ISA rounded once, as for posenc_rope_bf16.
 * Errors (nothing written): POSENC_ERR_INVALID_ARGUMENT for a NULL plan, plans of different
 * rotary_dim, r outside [FLT_MIN, FLT_MAX], unknown flags or POSENC_ROPE_INVERSE, a run
 * (NULL positions) passing INT32_MAX, and every error of posenc_rope_f32 for `keys` (NULL
 * keys, or NULL data with work to do, R > head_dim, overlapping head vectors, overflow).
 * n_tokens = 0 or keys->n_heads = 0 is a valid no-op. */
POSENC_API posenc_status posenc_rope_rerotate_f32(const posenc_rope_plan *from,
                                                  const int32_t *from_positions, int32_t from_start,
                                                  const posenc_rope_plan *to,
                                                  const int32_t *to_positions, int32_t to_start,
                                                  size_t head_dim, size_t n_tokens,
                                                  const posenc_rope_tensor *keys, unsigned flags);
POSENC_API posenc_status posenc_rope_rerotate_bf16(const posenc_rope_plan *from,
                                                   const int32_t *from_positions,
                                                   int32_t from_start, const posenc_rope_plan *to,
                                                   const int32_t *to_positions, int32_t to_start,
                                                   size_t head_dim, size_t n_tokens,
                                                   const posenc_rope_tensor *keys, unsigned flags);
POSENC_API posenc_status posenc_rope_rerotate_f16(const posenc_rope_plan *from,
                                                  const int32_t *from_positions, int32_t from_start,
                                                  const posenc_rope_plan *to,
                                                  const int32_t *to_positions, int32_t to_start,
                                                  size_t head_dim, size_t n_tokens,
                                                  const posenc_rope_tensor *keys, unsigned flags);
/**@}*/

/* ----- Runtime-shaped RoPE: 4-D views, out of place, shared rotation factors ----------- */

/** Storage type of the elements of a posenc_rope_view. */
typedef enum posenc_dtype {
  POSENC_DTYPE_F32 = 0,  /**< float */
  POSENC_DTYPE_BF16 = 1, /**< bfloat16 bits in a uint16_t */
  POSENC_DTYPE_F16 = 2   /**< IEEE binary16 bits in a uint16_t */
} posenc_dtype;

/** A 4-D strided view of head vectors: element d of head h of token t of batch b is at
 *     data[b * batch_stride + t * token_stride + h * head_stride + d],  d in [0, head_dim)
 * (strides in elements of `dtype`). Every layout runtimes use is one view:
 *   [B, L, H, D] contiguous (llama.cpp, vLLM):  batch_stride = L*H*D, token_stride = H*D,
 *                                               head_stride = D
 *   [B, H, L, D] contiguous (HF transformers):  batch_stride = H*L*D, token_stride = D,
 *                                               head_stride = L*D
 *   one K-cache row per token (f16/bf16 cache):  data = cache + slot * row, token_stride = row
 *   packed QKV rows: as posenc_rope_tensor.
 * A destination view's head vectors must be pairwise disjoint: the three (count, stride)
 * dimensions with a count above 1, sorted by stride, must nest (each stride at least the
 * extent of the dimensions inside it, the smallest at least head_dim). A source view is only
 * read, and may repeat head vectors (batch_stride 0 reads one tensor for every batch).
 * `data` needs element alignment only; a source is never written through. */
typedef struct posenc_rope_view {
  void *data;
  posenc_dtype dtype;
  size_t n_heads;
  size_t token_stride;
  size_t head_stride;
  size_t batch_stride; /**< ignored when the call's n_batch is 1 */
} posenc_rope_view;

/** Out-of-place RoPE: dst = rope(src), reading each element of src once and writing each
 * element of dst once (elements [R, head_dim) of each head vector are copied, converted to
 * dst's type when it differs). Type pairs (src -> dst): f32 -> f32, bf16 -> bf16,
 * f16 -> f16, f32 -> bf16 and f32 -> f16 (a K projection rotated straight into a 16-bit KV
 * cache; the f32 result rounded once, as posenc_rope_bf16 / _f16 round). Every rotated
 * element is bitwise the element posenc_rope_f32 (or _bf16 / _f16 for 16-bit sources) of the
 * same ISA computes in place for the same position, flags and plan, rounded to dst's type.
 *
 * Shape: n_batch x n_tokens tokens of src->n_heads heads (dst->n_heads must be equal).
 * Positions: token t of batch b is at positions[b * n_tokens + t] (HF's position_ids
 * [B, L] row-major), or, if positions is NULL, at start_pos + t in every batch.
 * dst->data == src->data with the same dtype and strides is the in-place case (then as
 * posenc_rope_f32 on that view); any other overlap of the two views' address ranges is an
 * error. flags: as posenc_rope_f32 (NEOX / GPTJ, INVERSE, F32_ANGLES, DETERMINISTIC).
 * Errors (nothing written): POSENC_ERR_INVALID_ARGUMENT for a NULL plan, src or dst, NULL
 * data with work to do, an unsupported type pair or unknown dtype, unknown flags, R >
 * head_dim, different head counts, a destination whose head vectors overlap, src and dst
 * overlapping (other than the in-place case), a view whose extent overflows, a run (NULL
 * positions) passing INT32_MAX, n_batch * n_tokens overflowing. n_batch, n_tokens or
 * n_heads 0: a valid no-op.
 *
 * Cache: a call whose destination holds 16 MiB or more (a prefill's K into its cache, say)
 * writes it with non-temporal stores on sse4, avx2 and avx512 (the same values; bf16 / f16
 * destinations on avx2 and avx512), fenced before the call returns: such a destination would
 * evict most of a last-level cache anyway, and skipping the read of every destination line
 * brings these calls to the machine's copy speed. A smaller destination is written through
 * the caches as usual. The same holds for every out-of-place form (posenc_rope_apply,
 * posenc_rope_out_slots, posenc_mrope_out, ...); QK-norm, quantized and deterministic
 * calls always store normally. */
POSENC_API posenc_status posenc_rope_out(const posenc_rope_plan *plan, size_t head_dim,
                                         size_t n_batch, size_t n_tokens, const int32_t *positions,
                                         int32_t start_pos, const posenc_rope_view *src,
                                         const posenc_rope_view *dst, unsigned flags);

/** posenc_rope_out for M-RoPE (see posenc_mrope_f32): positions holds 3 rows (temporal,
 * height, width) of n_batch * n_tokens positions each, HF's position_ids (3, B, L)
 * row-major (4 rows and 4 sections with POSENC_ROPE_MROPE_GGML); flags may add
 * POSENC_ROPE_MROPE_INTERLEAVED and POSENC_ROPE_MROPE_GGML. Errors: those of posenc_rope_out
 * and posenc_mrope_f32. */
POSENC_API posenc_status posenc_mrope_out(const posenc_rope_plan *plan, const size_t sections[3],
                                          size_t head_dim, size_t n_batch, size_t n_tokens,
                                          const int32_t *positions, const posenc_rope_view *src,
                                          const posenc_rope_view *dst, unsigned flags);

/** The cache cells of posenc_rope_out_slots: token t goes to cell index[t] (skipped where
 * index[t] < 0). */
typedef struct posenc_slots {
  const void *index; /**< n_tokens cells: int32_t, or int64_t if is_int64 */
  int is_int64;      /**< 0: int32_t indices, 1: int64_t (vLLM's slot_mapping) */
  size_t n_cells;    /**< the cells of dst: every index must be below it */
} posenc_slots;

/** posenc_rope_out into a paged or cell-addressed KV cache: token t of src (one batch) is
 * rotated as posenc_rope_out rotates it (same plan, flags, positions, type pairs and
 * results, bitwise) and written to cell slots->index[t] of dst, or nowhere where that index
 * is negative (vLLM's padding tokens). dst is a view of slots->n_cells cells, its
 * token_stride stepping from cell to cell:
 *   vLLM [num_blocks, block_size, kv_heads, D]: cell = block * block_size + offset (vLLM's
 *        slot_mapping), token_stride = kv_heads * D, head_stride = D;
 *   llama.cpp's K cache [kv_heads, cells, D] (a cell per KV slot): token_stride = D,
 *        head_stride = cells * D.
 * Elements [R, head_dim) are copied (converted) as by posenc_rope_out; nothing else of dst
 * is touched. The cells are checked before anything is written: each below n_cells, no
 * cell twice (a token count of up to 32 compares pairs, more sort a copy: O(n log n), one
 * allocation). There is no in-place form: src and dst must not share addresses.
 * Errors (nothing written): those of posenc_rope_out, plus a NULL slots, a NULL index with
 * n_tokens > 0, is_int64 not 0 or 1, an index >= n_cells, two tokens for one cell, dst's
 * n_cells cells overlapping each other or src; POSENC_ERR_OUT_OF_MEMORY if the copy cannot
 * be allocated. n_tokens, n_heads or n_cells 0, or every index negative: a no-op. */
POSENC_API posenc_status posenc_rope_out_slots(const posenc_rope_plan *plan, size_t head_dim,
                                               size_t n_tokens, const int32_t *positions,
                                               int32_t start_pos, const posenc_rope_view *src,
                                               const posenc_rope_view *dst,
                                               const posenc_slots *slots, unsigned flags);

/** A destination of ggml q8_0 blocks (posenc_rope_out_q8_0): each head vector of D
 * elements is D / 32 consecutive blocks of 34 bytes (ggml's block_q8_0: the scale d as IEEE
 * f16 bits, then 32 int8 q; x ~ d * q), the head vector of head h of row r at
 * data + r * token_stride + h * head_stride (strides in bytes, as ggml's nb[1], nb[2]). */
typedef struct posenc_q8_0_view {
  void *data; /**< 2-byte aligned */
  size_t n_heads;
  size_t token_stride; /**< bytes, even */
  size_t head_stride;  /**< bytes, even */
} posenc_q8_0_view;

/** RoPE straight into a q8_0 K cache: each head vector of src (f32, one batch) is rotated
 * exactly as posenc_rope_out rotates it into f32 (the same plan, flags and positions; bitwise
 * the same floats, elements [R, head_dim) copied) and quantized as ggml's
 * quantize_row_q8_0_ref quantizes that row, bit for bit: per block of 32, amax = max |x|,
 * d = amax / 127 in float, stored as f16 (round to nearest even), q = roundf(x * (1 / d))
 * with the unrounded d (0 when d is 0). One pass: a token's heads are rotated into a buffer
 * in L1 and quantized from there, where rotating into an f32 tensor and quantizing it reads
 * and writes that tensor once more. Token t goes to row t of dst, or with slots (may be NULL)
 * to row slots->index[t] of slots->n_cells rows (skipped where negative; the rules of
 * posenc_rope_out_slots). Where ggml's conversion of q to int8 is undefined (q NaN,
 * infinite or outside [-128, 127]: a NaN or an infinity in the block, or an amax in
 * [~2^-142, ~2^-121), whose d is nonzero but below 2^-128, so 1 / d overflows) the block has
 * ggml's d and q = 0 at those elements.
 * head_dim: a multiple of 32, at most 4096; rotary_dim at most 512.
 * Errors (nothing written): those of posenc_rope_out for src, a NULL dst, a src dtype other
 * than f32, head_dim not a multiple of 32 or above 4096, rotary_dim above 512, dst's head
 * count other than src's, odd or misaligned dst, dst rows that overlap each other or src, and
 * the slots' errors of posenc_rope_out_slots. */
POSENC_API posenc_status posenc_rope_out_q8_0(const posenc_rope_plan *plan, size_t head_dim,
                                              size_t n_tokens, const int32_t *positions,
                                              int32_t start_pos, const posenc_rope_view *src,
                                              const posenc_q8_0_view *dst,
                                              const posenc_slots *slots, unsigned flags);

/** A destination of OCP FP8 E4M3 bytes (posenc_rope_out_fp8): one byte per element, the
 * head vector of head h of row r at data + r * token_stride + h * head_stride (strides in
 * bytes, which are elements). As vLLM's fp8 KV cache ("fp8" / "fp8_e4m3",
 * torch.float8_e4m3fn or uint8 storage): [num_blocks, block_size, kv_heads, D] gives
 * token_stride = kv_heads * D, head_stride = D, with slots (vLLM's slot_mapping). */
typedef struct posenc_fp8_view {
  void *data;
  size_t n_heads;
  size_t token_stride; /**< bytes */
  size_t head_stride;  /**< bytes */
} posenc_fp8_view;

/** RoPE straight into an FP8 E4M3 K cache: each head vector of src (f32, one batch) is
 * rotated exactly as posenc_rope_out rotates it into f32 (the same plan, flags and
 * positions; bitwise the same floats, elements [R, head_dim) copied), and each float v is
 * stored as the OCP FP8 E4M3 byte (float8_e4m3fn: sign, 4 exponent bits of bias 7, 3
 * mantissa bits; no infinities, NaN S.1111.111, largest finite 448, subnormals k * 2^-9) of
 * y = v / scale, y computed in float (one IEEE division, as vLLM writes its fp8 cache: its
 * CUDA reshape_and_cache / reshape_and_cache_flash convert each element with
 * __nv_cvt_float_to_fp8(x / k_scale, __NV_SATFINITE, __NV_E4M3),
 * csrc/quantization/fp8/nvidia/quant_utils.cuh scaled_vec_conversion; a 16-bit key is
 * widened to float first). y is rounded once, to nearest with ties to even, from its exact
 * value (no double rounding); saturating: finite values and infinities beyond 448 in
 * magnitude become +-448 (0x7E / 0xFE); a NaN stays NaN, always 0x7F (as CUDA's conversion
 * writes it: the sign of a NaN is not portable, RISC-V's arithmetic clears it); -0 and
 * values of at most 2^-10 in magnitude
 * keep their sign (0x80 for negative ones). Every ISA writes the same bytes: the scalar
 * reference is integer logic on y's bits, the SIMD converters reach the same bytes in float
 * operations that each round once. One pass: a token's heads are rotated into a buffer in
 * L1 and converted from there. Token t goes to row t of dst, or with slots (may be NULL) to
 * row slots->index[t] of slots->n_cells rows (skipped where negative; the rules of
 * posenc_rope_out_slots); nothing else of dst is touched. head_dim: at most 4096 (any
 * size); rotary_dim at most 512. scale: finite and > 0 (vLLM's k_scale, 1.0 when it has
 * none). Not vLLM's ROCm fp8 path (e4m3fnuz on MI300, bias 8).
 * Errors (nothing written): those of posenc_rope_out for src, a NULL dst, a src dtype other
 * than f32, a scale that is not finite or not > 0, head_dim above 4096, rotary_dim above
 * 512, dst's head count other than src's, dst rows that overlap each other or src, and the
 * slots' errors of posenc_rope_out_slots. */
POSENC_API posenc_status posenc_rope_out_fp8(const posenc_rope_plan *plan, size_t head_dim,
                                             size_t n_tokens, const int32_t *positions,
                                             int32_t start_pos, const posenc_rope_view *src,
                                             const posenc_fp8_view *dst, float scale,
                                             const posenc_slots *slots, unsigned flags);

/** The per-head RMSNorm that Qwen3, Gemma 3 and OLMo 2 apply to q and k right before RoPE
 * (posenc_rope_qknorm): n = x * inv * w over each head vector's head_dim elements, with
 * inv = 1 / sqrt(mean(x^2) + eps). */
typedef struct posenc_qk_norm {
  const float *weight; /**< head_dim floats (the norm's learned weight, as float) */
  float eps;           /**< added to the mean of squares; finite, >= 0 */
  unsigned flags;      /**< 0 or POSENC_QK_NORM_GEMMA */
} posenc_qk_norm;

/** posenc_qk_norm.flags. */
enum {
  /** Gemma's form: each element scaled by (1 + weight) (computed in float) instead of weight */
  POSENC_QK_NORM_GEMMA = 1u << 0
};

/** QK-norm and RoPE in one pass: every head vector x of q (and k) becomes
 *     y = rope(n),  n_d = (x_d * inv) * w_d,  inv = 1 / sqrt((float)(sum_d x_d^2 / D + eps))
 * (w_d + 1 with POSENC_QK_NORM_GEMMA), the rotation that of posenc_rope_out (same plan,
 * flags, positions and type pairs) applied to n instead of x; elements [R, D) are n too.
 * Each element is read from memory once and written once (its head's sum of squares, then
 * the rotation, which applies the norm as it loads the head again from L1), where a
 * separate norm pass reads and writes every element twice. q and k take their own weights (q_norm,
 * k_norm; NULL: that tensor is only rotated, as by posenc_rope_out). Views: q_src -> q_dst and
 * k_src -> k_dst as posenc_rope_out's src -> dst (dst = src for in place: the same pointer, or the
 * same data, type and strides), 4-D, n_batch x n_tokens tokens; k_src NULL: q only (k_dst and
 * k_norm must then be NULL). Both tensors have one type pair (f32 -> f32, bf16 -> bf16, f16 -> f16,
 * f32 -> bf16, f32 -> f16). A destination must not share addresses with the other tensor's source
 * or destination, except in-place packed QKV rows of one batch (as posenc_rope_f32 accepts them).
 * Numerics: the sum of squares in float lanes of at most ceil(D/8) squares each, added in
 * double (the scalar variant sums in double), the mean + eps rounded to float, its square root
 * and reciprocal in float (each rounded), a = x * inv rounded as HF's float RMSNorm rounds it,
 * then n = a * w (for 16-bit models HF also rounds a to the model's type before the weight;
 * posenc does not); so each n_d is within (D/16 + 3) * 2^-24 relative of the exact
 * (x_d / sqrt(mean + eps)) * w_d where x_d * inv is a normal float (one that rounds to a
 * subnormal is exact to 2^-149 absolute, so n_d to |w_d| 2^-148), and y is then within
 * posenc_rope_out's bounds of the rotation of n. Outside the deterministic mode the SIMD
 * variants fold the weight into the factors instead of forming n in the rotated elements (NEOX
 * everywhere; GPT-J on AVX-512 and SSE4 at R = 128): y_u = a_u (w_u c) - a_v (w_v s), y_v =
 * a_v (w_v c) + a_u (w_u s) (as many roundings), within the same bound of the rotation of the
 * exact n. A NaN or infinite element makes its head's inv NaN or 0 (NaN out, as HF). Every
 * ISA's result is within that bound of the long double one; a token's result does not depend on
 * the call's other tokens (split invariance).
 *
 * Errors (nothing written): those of posenc_rope_out for each tensor, plus a NULL q_src or
 * q_dst, k_dst without k_src or k_src without k_dst, k_norm without k_src, a norm with a
 * NULL weight, eps negative or not finite, or unknown norm flags, k's type pair other than
 * q's, overlapping tensors (above), and with a norm: rotary_dim > 512 or head_dim > 4096. */
POSENC_API posenc_status posenc_rope_qknorm(
    const posenc_rope_plan *plan, size_t head_dim, size_t n_batch, size_t n_tokens,
    const int32_t *positions, int32_t start_pos, const posenc_rope_view *q_src,
    const posenc_rope_view *q_dst, const posenc_qk_norm *q_norm, const posenc_rope_view *k_src,
    const posenc_rope_view *k_dst, const posenc_qk_norm *k_norm, unsigned flags);

/** Rotation factors: the cos/sin (times the plan's attention factor) of n_rows tokens, made
 * once per decode step or prefill by posenc_rope_factors_compute and applied by
 * posenc_rope_apply to the Q and K of every layer: a pure stream with no sin/cos and no
 * plan. The storage is the caller's (posenc_rope_factors_bytes); the struct says what it
 * holds. Row r is `row_floats` floats at data + r * row_floats; its layout is the one the
 * kernels read (NEOX: R/2 cos then R/2 sin; GPTJ: R cos then R signed sin, duplicated per
 * pair; no padding, whatever the vector width: row_floats = 2 (R/2) or 2 R; since 0.2.0,
 * CHANGELOG.md), treated as opaque. A
 * sub-range of rows is a copy of the struct with `data` moved on by whole rows and n_rows
 * reduced (e.g. to share one buffer among threads). */
typedef struct posenc_rope_factors {
  float *data;
  size_t n_rows;
  size_t rotary_dim;
  size_t row_floats;
  unsigned flags; /**< POSENC_ROPE_GPTJ (interleaved pairs) | POSENC_ROPE_DETERMINISTIC, as made */
} posenc_rope_factors;

/** Bytes of storage for n_rows rows of factors of a plan with this rotary_dim, made with
 * these flags (only POSENC_ROPE_GPTJ changes the size). 0 means refused, or nothing to
 * store: an invalid rotary_dim, flags the factor path refuses (below), a size that
 * overflows, or n_rows = 0.
 *
 * Flags, one rule for posenc_rope_factors_bytes, the factor computations and
 * posenc_rope_apply: the factor path takes the plan path's flags, so that one flags value
 * passed to all three gives posenc_rope_out's result for it (posenc_mrope_out's through
 * posenc_mrope_factors_compute). posenc_rope_factors_compute takes posenc_rope_f32's flags,
 * posenc_mrope_factors_compute posenc_mrope_f32's, and posenc_rope_factors_bytes and
 * posenc_rope_apply, which serve both, either. Each flag acts where it has a meaning and is
 * a no-op elsewhere:
 *  - POSENC_ROPE_GPTJ: the pair layout: the row size (bytes), the rows (compute), the pairs
 *    rotated (apply). Recorded in factors->flags.
 *  - POSENC_ROPE_DETERMINISTIC: the values (compute) and the rotation without fused
 *    multiply-adds (apply). Recorded in factors->flags.
 *  - POSENC_ROPE_F32_ANGLES: the values (compute); a no-op for bytes and apply (the angles
 *    are in the rows).
 *  - POSENC_ROPE_INVERSE: the direction (apply); a no-op for bytes and compute (the rows
 *    hold the forward cos/sin, for either direction).
 *  - POSENC_ROPE_MROPE_INTERLEAVED, POSENC_ROPE_MROPE_GGML: the sections
 *    (posenc_mrope_factors_compute); no-ops for bytes and apply; refused by
 *    posenc_rope_factors_compute, as by posenc_rope_f32.
 *  - POSENC_ROPE_POSITIONS_INT64: the positions' type (compute); a no-op for bytes and
 *    apply (no positions).
 * Any other bit is refused by all three alike: POSENC_ERR_INVALID_ARGUMENT and nothing
 * written (here: 0). posenc_rope_apply also requires its flags' recorded bits (GPTJ,
 * DETERMINISTIC) to be factors->flags. */
POSENC_API size_t posenc_rope_factors_bytes(size_t rotary_dim, size_t n_rows, unsigned flags);

/** Fills `storage` (float-aligned, storage_bytes >= posenc_rope_factors_bytes(R, n_rows,
 * flags)) with the factors of rows r in [0, n_rows): the position of row r is positions[r],
 * or start_pos + r when positions is NULL. flags: those of posenc_rope_f32 (NEOX / GPTJ,
 * INVERSE, F32_ANGLES, DETERMINISTIC), by the factor path's rule (posenc_rope_factors_bytes):
 * INVERSE is a no-op here (posenc_rope_apply rotates by -angle), factors->flags records
 * GPTJ and DETERMINISTIC. *factors describes the result.
 * The values are exactly those posenc_rope_f32 of the same ISA uses for that position, so
 * applying them with the same flags gives bitwise posenc_rope_f32's result for those flags.
 * Errors (nothing written): POSENC_ERR_INVALID_ARGUMENT for a NULL plan, factors or storage
 * (with n_rows > 0), misaligned storage, storage_bytes too small, flags posenc_rope_f32
 * refuses (the M-RoPE flags included), a plan made for a ggml M-RoPE mode, a run passing
 * INT32_MAX. */
POSENC_API posenc_status posenc_rope_factors_compute(const posenc_rope_plan *plan, size_t n_rows,
                                                     const int32_t *positions, int32_t start_pos,
                                                     unsigned flags, void *storage,
                                                     size_t storage_bytes,
                                                     posenc_rope_factors *factors);

/** The same for M-RoPE: positions holds 3 rows of n_rows positions (temporal, height,
 * width; 4 rows and 4 sections with POSENC_ROPE_MROPE_GGML); flags may add
 * POSENC_ROPE_MROPE_INTERLEAVED and POSENC_ROPE_MROPE_GGML. Errors also as posenc_mrope_f32. */
POSENC_API posenc_status posenc_mrope_factors_compute(const posenc_rope_plan *plan,
                                                      const size_t sections[3], size_t n_rows,
                                                      const int32_t *positions, unsigned flags,
                                                      void *storage, size_t storage_bytes,
                                                      posenc_rope_factors *factors);

/** Applies factors to n_batch x n_tokens tokens, in place (dst == src, as for
 * posenc_rope_out) or out of place, with posenc_rope_out's type pairs and views: token t of
 * batch b takes row first_row + b * row_batch_stride + t (row_batch_stride = n_tokens: one
 * row per token of every sequence; 0: every batch at the same positions). The plan's
 * rotary_dim is factors->rotary_dim. flags, by the factor path's rule
 * (posenc_rope_factors_bytes): those the factors were computed with, or any flags whose
 * GPTJ and DETERMINISTIC bits are factors->flags; POSENC_ROPE_INVERSE rotates by -angle,
 * POSENC_ROPE_F32_ANGLES and the M-RoPE flags are no-ops (the rows hold the angles). The factor
 * rows must not lie in the destination. Errors (nothing written): those of posenc_rope_out for the
 * views, plus a NULL factors or data, a factors->flags with other bits, flags the factor path
 * refuses, GPTJ or DETERMINISTIC bits other than factors->flags', factor rows the destination
 * overlaps, rotary_dim invalid or > head_dim, row_floats not the one posenc_rope_factors_compute
 * writes, and rows beyond n_rows (factors too small for the shape). */
POSENC_API posenc_status posenc_rope_apply(const posenc_rope_factors *factors, size_t first_row,
                                           size_t row_batch_stride, size_t head_dim, size_t n_batch,
                                           size_t n_tokens, const posenc_rope_view *src,
                                           const posenc_rope_view *dst, unsigned flags);

/** posenc_rope_apply into a paged or cell-addressed KV cache, as posenc_rope_out_slots
 * writes one: token t of src (one batch of n_tokens tokens) takes factor row first_row + t,
 * is rotated as posenc_rope_apply rotates it, and is written to cell slots->index[t] of dst
 * (skipped where negative); dst, slots and the type pairs as for posenc_rope_out_slots, the
 * factors and flags by posenc_rope_apply's rules. The result is bitwise posenc_rope_out_slots'
 * with the plan, positions and flags the factors were computed from (and the same flags
 * here); nothing else of dst is touched. There is no in-place form.
 * Errors (nothing written): those of posenc_rope_apply for the factors and flags (factor rows
 * beyond factors->n_rows, rows the cells overlap, ...), a NULL src or dst, and the errors of
 * posenc_rope_out_slots for src, dst and slots (a NULL slots, an index >= n_cells, two
 * tokens for one cell, ...; POSENC_ERR_OUT_OF_MEMORY as there). n_tokens, n_heads or n_cells
 * 0, or every index negative: a no-op. */
POSENC_API posenc_status posenc_rope_apply_slots(const posenc_rope_factors *factors,
                                                 size_t first_row, size_t head_dim, size_t n_tokens,
                                                 const posenc_rope_view *src,
                                                 const posenc_rope_view *dst,
                                                 const posenc_slots *slots, unsigned flags);

/** @} */

/* --------------------------------------------------------------------------------------- */
/** \defgroup sinusoid Sinusoidal position encoding (Vaswani et al.)
 *
 * A row of width d (dim) for position p holds, for pair i in [0, ceil(d/2)):
 *      sin(p * w_i) and cos(p * w_i),     w_i = base^(-2i/d) by default
 * placed by the layout flag:
 *  - POSENC_SINUSOID_INTERLEAVED (default; seeds, Vaswani): column 2i = sin, 2i+1 = cos.
 *  - POSENC_SINUSOID_SIN_COS (tensor2tensor, fairseq, diffusers get_timestep_embedding):
 *      columns [0, ceil(d/2)) = sin of pair i, then columns [ceil(d/2), d) = cos of pair i.
 *  - POSENC_SINUSOID_COS_SIN (diffusers flip_sin_to_cos=True): columns [0, floor(d/2)) =
 *      cos of pair i, then [floor(d/2), d) = sin of pair i.
 * Odd d: the last pair has only its sin term (interleaved: column d-1; split: the sin block
 * is one column longer than the cos block, so with SIN_COS every cos column sits one to the
 * right of where a zero-padded layout such as fairseq's or diffusers' would put it).
 *
 * Frequencies other than Vaswani's come from posenc_sinusoid_plan_create_from_freqs: with
 * h = floor(d/2), fairseq and tensor2tensor use w_i = base^(-i/(h-1)); diffusers uses
 * w_i = scale * base^(-i/(h - downscale_freq_shift)) (its zero padding of an odd d is not
 * reproduced: posenc fills the extra column with the sin of one more pair).
 *
 * Accuracy: the same contract as RoPE's angles. In the default (accurate) mode every value
 * is within 2^-22 (absolute) of sin/cos of the exact real product p * w_i (w_i the plan's
 * double) for every integer |p| < 2^31 and every float timestep |t| < 2^31; measured worst
 * case in the README. POSENC_SINUSOID_F32_ANGLES reproduces the float32 recipe instead
 * (angle = (float)p * (float)w_i rounded to float), with sin/cos within 2^-22 of those of
 * that float angle. SIMD variants are within
 * POSENC_SINUSOID_SIMD_TOLERANCE of the scalar variant's value for the same element (for
 * posenc_sinusoid_add_f32: of the scalar result, plus one rounding of the sum). Like the
 * SIMD RoPE variants, they form the sin/cos of integer positions from those of anchors by
 * angle addition (d <= 512: anchors at multiples of 64, in double, with the exact cos/sin of
 * k w_i; larger d: anchors at multiples of 32 computed in double and split into float
 * hi + lo, rotated in float by cos/sin(k w_i) rounded to float: within 2^-23 of the exact
 * value, 1.5 x 2^-23 on sse4), so every row depends only on its position (split invariance,
 * as for RoPE). POSENC_SINUSOID_DETERMINISTIC: bitwise
 * identical values on every ISA and CPU, as POSENC_ROPE_DETERMINISTIC (every row computed
 * afresh by the same operations; also for timesteps and the float32 recipe).
 * @{
 */

#define POSENC_SINUSOID_SIMD_TOLERANCE 9.5367431640625e-07 /**< 2^-20 */

enum {
  POSENC_SINUSOID_INTERLEAVED = 0u,  /**< sin, cos, sin, cos, ... (default) */
  POSENC_SINUSOID_SIN_COS = 1u,      /**< all sin, then all cos */
  POSENC_SINUSOID_COS_SIN = 2u,      /**< all cos, then all sin */
  POSENC_SINUSOID_ACCURATE = 0u,     /**< accurate angles (default) */
  POSENC_SINUSOID_F32_ANGLES = 4u,   /**< float32-compatible angles */
  POSENC_SINUSOID_DETERMINISTIC = 8u /**< bitwise identical results on every ISA and CPU */
};

/** A sinusoidal plan: the width d and ceil(d/2) frequencies. Immutable; shareable between
 * threads. */
typedef struct posenc_sinusoid_plan posenc_sinusoid_plan;

/** w_i = base^(-2i/d) in double. dim: >= 1, <= 2^20. base: finite, > 0, != 1, and every w_i
 * must come out with |w_i| <= 1024 (10000 in the paper; diffusers calls it max_period).
 * *plan receives a new plan, or NULL on error. */
POSENC_API posenc_status posenc_sinusoid_plan_create(posenc_sinusoid_plan **plan, size_t dim,
                                                     double base);

/** A plan from ceil(dim/2) given frequencies (radians per position, |w| <= 1024, as for
 * posenc_rope_plan_create_from_freqs). */
POSENC_API posenc_status posenc_sinusoid_plan_create_from_freqs(posenc_sinusoid_plan **plan,
                                                                size_t dim, const double *freqs);

/** Frees a plan; NULL is a no-op. */
POSENC_API void posenc_sinusoid_plan_destroy(posenc_sinusoid_plan *plan);

/**@{*/
/** The plan's width d (0 for NULL), and its ceil(d/2) frequencies copied to `freqs`. */
POSENC_API size_t posenc_sinusoid_plan_dim(const posenc_sinusoid_plan *plan);
POSENC_API posenc_status posenc_sinusoid_plan_freqs(const posenc_sinusoid_plan *plan,
                                                    double *freqs);
/**@}*/

/** Writes n_rows rows of d values: row r (at out + r * row_stride) is the encoding of
 * position positions[r], or, if positions is NULL, of start_pos + r (which must not exceed
 * INT32_MAX; seed 000's forward(seq_len, offset) is start_pos = offset). row_stride: 0 for
 * d (a dense [n_rows, d] table), else >= d; elements between rows are untouched.
 * flags: one layout, optionally | POSENC_SINUSOID_F32_ANGLES.
 * Errors (nothing written): NULL plan, NULL out with n_rows > 0, unknown flags,
 * 0 < row_stride < d, an extent that overflows, start_pos overflow, misaligned out. */
POSENC_API posenc_status posenc_sinusoid_fill_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                  const int32_t *positions, int32_t start_pos,
                                                  float *out, size_t row_stride, unsigned flags);

/** The same for float positions (diffusion timesteps): row r encodes timesteps[r], which
 * must be finite with |t| < 2^31 (checked before anything is written; NULL timesteps with
 * n_rows > 0 is an error). Timesteps are never stepped: every row is computed afresh. */
POSENC_API posenc_status posenc_sinusoid_fill_timesteps_f32(const posenc_sinusoid_plan *plan,
                                                            size_t n_rows, const float *timesteps,
                                                            float *out, size_t row_stride,
                                                            unsigned flags);

/** Adds the encoding into n_rows embeddings of width d in place (x[r] += PE(position of r)),
 * without building a table (seeds 003, 004). Positions, row_stride and errors as for
 * posenc_sinusoid_fill_f32. */
POSENC_API posenc_status posenc_sinusoid_add_f32(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const int32_t *positions, int32_t start_pos,
                                                 float *x, size_t row_stride, unsigned flags);

/**@{*/
/** The three operations above on rows stored as bf16 (bfloat16, the upper half of a float)
 * or f16 (IEEE 754 binary16), each element a uint16_t holding those bits; out and x need
 * 2-byte alignment, row_stride is counted in elements. Arguments, positions, timesteps and
 * errors as for the _f32 function of the same name.
 * Each value is the value the _f32 function gives with the same ISA (for add: on the
 * embeddings widened to float, which is exact, so one float addition), rounded to the
 * storage type to nearest with ties to even: for f16, magnitudes of 65520 and more become
 * infinity and small values subnormal; NaN stays NaN. So every value is within the f32
 * bounds above plus half an ulp of the storage type: at most 2^-9 (bf16) or 2^-12 (f16) for
 * the encoding values, whose magnitude is at most 1. */
POSENC_API posenc_status posenc_sinusoid_fill_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                   const int32_t *positions, int32_t start_pos,
                                                   uint16_t *out, size_t row_stride,
                                                   unsigned flags);
POSENC_API posenc_status posenc_sinusoid_fill_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                  const int32_t *positions, int32_t start_pos,
                                                  uint16_t *out, size_t row_stride, unsigned flags);
POSENC_API posenc_status posenc_sinusoid_fill_timesteps_bf16(const posenc_sinusoid_plan *plan,
                                                             size_t n_rows, const float *timesteps,
                                                             uint16_t *out, size_t row_stride,
                                                             unsigned flags);
POSENC_API posenc_status posenc_sinusoid_fill_timesteps_f16(const posenc_sinusoid_plan *plan,
                                                            size_t n_rows, const float *timesteps,
                                                            uint16_t *out, size_t row_stride,
                                                            unsigned flags);
POSENC_API posenc_status posenc_sinusoid_add_bf16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                  const int32_t *positions, int32_t start_pos,
                                                  uint16_t *x, size_t row_stride, unsigned flags);
POSENC_API posenc_status posenc_sinusoid_add_f16(const posenc_sinusoid_plan *plan, size_t n_rows,
                                                 const int32_t *positions, int32_t start_pos,
                                                 uint16_t *x, size_t row_stride, unsigned flags);
/**@}*/

/** @} */

/* --------------------------------------------------------------------------------------- */
/** \defgroup alibi ALiBi: attention with linear biases (Press et al.)
 *
 * Scores S[h][i][j] of head h, query row i and key column j sit at
 *     scores[h * head_stride + i * row_stride + j],  j in [0, n_k).
 * Query row i is at position qpos = q_offset + i, key column j at position j, so a
 * KV-cache decode step is n_q = 1, q_offset = n_k - 1. The bias of an element is
 *     b = -(m_h * |qpos - j|)
 * computed in float: the distance converted to float, one rounded product (seed 000's
 * float32 slopes times the distance, exactly as its get_bias rounds to float32). With
 * POSENC_ALIBI_CAUSAL, elements with j > qpos are set to -infinity instead (their old
 * value is not read). Every variant performs the same float operations in the same order,
 * so every variant's output is bit-identical to the scalar reference's.
 * @{
 */

enum {
  POSENC_ALIBI_CAUSAL = 1u /**< -infinity where the key is after the query */
};

/** The slopes of n_heads heads (seed 000's _get_slopes with max_bias for its 8): for a power
 * of two n, m_h = 2^(-max_bias * (h + 1) / n); otherwise, with c the largest power of two
 * below n, the c slopes for c heads followed by the first n - c odd-indexed ones of 2c
 * heads, m = 2^(-max_bias * (2k + 1) / (2c)). Computed in double, rounded to float.
 * n_heads: >= 1. max_bias: finite, > 0 (8 in the paper). */
POSENC_API posenc_status posenc_alibi_slopes(size_t n_heads, double max_bias, float *slopes);

/** The slopes as ggml computes them (ggml_soft_max_ext, ggml_flash_attn_ext; llama.cpp's
 * ALiBi models), bit for bit with the C library's powf that ggml calls, in float:
 *     c  = 2^floor(log2(n_heads)),  m0 = powf(2, -max_bias / c),
 *     m1 = powf(2, -(max_bias / 2) / c),
 *     m_h = powf(m0, h + 1) for h < c, else powf(m1, 2 (h - c) + 1);
 * every slope 1 when max_bias is 0 (ggml's models without ALiBi). The same formula as
 * posenc_alibi_slopes, rounded differently: of 32 heads with max_bias 8, most slopes differ
 * from posenc_alibi_slopes' (correctly rounded) ones in the last bits.
 * Errors (nothing written): POSENC_ERR_INVALID_ARGUMENT for a NULL slopes, n_heads 0 or
 * above 2^32 - 1 (ggml counts heads in uint32_t), and a max_bias that is NaN, infinite or
 * negative. */
POSENC_API posenc_status posenc_alibi_slopes_ggml(size_t n_heads, float max_bias, float *slopes);

/** Adds the bias into scores, in place, after scaling the raw scores:
 *     S = (scale * S) - m_h * |qpos - j|      (scale == 1: S - m_h * |qpos - j|)
 * each operation rounded to float in that order; with POSENC_ALIBI_CAUSAL, S = -inf where
 * j > qpos. slopes: n_heads finite values (posenc_alibi_slopes, or your own). scale: finite.
 * Strides: rows nest in heads ([H, n_q, n_k]: row_stride >= n_k, head_stride >=
 * (n_q - 1) * row_stride + n_k) or heads in rows ([n_q, H, n_k]: head_stride >= n_k,
 * row_stride >= (n_heads - 1) * head_stride + n_k); a stride whose count is 1 is not
 * constrained. q_offset + n_q and n_k must not exceed 2^31. Any count 0 is a valid no-op
 * that reads no slope or score (flags, scale and the position limits are still checked).
 * flags: 0 or POSENC_ALIBI_CAUSAL.
 * Errors (nothing written): NULL slopes or scores with work to do, non-finite slope or
 * scale, strides that overlap, unknown flags, positions past 2^31, an extent that
 * overflows size_t or exceeds PTRDIFF_MAX bytes, misaligned scores. */
POSENC_API posenc_status posenc_alibi_add_f32(const float *slopes, size_t n_heads, size_t n_q,
                                              size_t n_k, size_t q_offset, float *scores,
                                              size_t head_stride, size_t row_stride, float scale,
                                              unsigned flags);

/** Writes the bias itself (no scores read): out = -(m_h * |qpos - j|), -inf above the
 * diagonal with POSENC_ALIBI_CAUSAL. Seed 000's get_bias(L) is n_q = n_k = L, q_offset = 0,
 * head_stride = L * L, row_stride = L: the (1, H, L, L) tensor, bit for bit (including its
 * -0.0 on the diagonal). Arguments and errors as for posenc_alibi_add_f32. */
POSENC_API posenc_status posenc_alibi_bias_f32(const float *slopes, size_t n_heads, size_t n_q,
                                               size_t n_k, size_t q_offset, float *out,
                                               size_t head_stride, size_t row_stride,
                                               unsigned flags);

/**@{*/
/** posenc_alibi_add_f32 and posenc_alibi_bias_f32 on scores stored as bf16 (bfloat16, the
 * upper half of a float) or f16 (IEEE 754 binary16), each element a uint16_t holding those
 * bits; scores and out need 2-byte alignment, strides are counted in elements. Arguments
 * and errors as for the _f32 function of the same name.
 * Each score is widened to float exactly, and each result is the _f32 function's float
 * value, rounded to the storage type to nearest with ties to even (f16: magnitudes of 65520
 * and more become infinity, small ones subnormal or zero with their sign; NaN stays NaN).
 * Like the f32 results, these are bit-identical across every ISA, and -inf (the causal
 * mask) and -0.0 (the bias on the diagonal) are kept. */
POSENC_API posenc_status posenc_alibi_add_bf16(const float *slopes, size_t n_heads, size_t n_q,
                                               size_t n_k, size_t q_offset, uint16_t *scores,
                                               size_t head_stride, size_t row_stride, float scale,
                                               unsigned flags);
POSENC_API posenc_status posenc_alibi_add_f16(const float *slopes, size_t n_heads, size_t n_q,
                                              size_t n_k, size_t q_offset, uint16_t *scores,
                                              size_t head_stride, size_t row_stride, float scale,
                                              unsigned flags);
POSENC_API posenc_status posenc_alibi_bias_bf16(const float *slopes, size_t n_heads, size_t n_q,
                                                size_t n_k, size_t q_offset, uint16_t *out,
                                                size_t head_stride, size_t row_stride,
                                                unsigned flags);
POSENC_API posenc_status posenc_alibi_bias_f16(const float *slopes, size_t n_heads, size_t n_q,
                                               size_t n_k, size_t q_offset, uint16_t *out,
                                               size_t head_stride, size_t row_stride,
                                               unsigned flags);
/**@}*/

/** The fused row kernel of an ALiBi attention layer: posenc_softmax (below) with the
 * ALiBi arguments of posenc_alibi_add_f32 (same slopes, shapes, strides, positions, scale
 * and flags), in place. Each row becomes the attention probabilities
 *     x_j = (scale * S_j) - m_h * |qpos - j|     (bit for bit posenc_alibi_add_f32's value)
 *     p_j = exp(x_j - M) / sum_k exp(x_k - M),   M = max_k x_k
 * over the row's visible keys: all n_k, or with POSENC_ALIBI_CAUSAL the keys j <= qpos.
 * Masked keys (j > qpos) get +0, and their scores are not read. It is exactly
 * posenc_softmax with params.slopes = slopes, params.q_offset = q_offset, params.scale =
 * scale, flags POSENC_SOFTMAX_ALIBI_SYMMETRIC (| POSENC_SOFTMAX_CAUSAL), and x = y = the
 * scores: special values, accuracy and speed as stated there.
 * Errors (nothing written): those of posenc_alibi_add_f32 (NULL slopes or scores with work
 * to do, non-finite slope or scale, strides that overlap, unknown flags, positions past
 * 2^31, an extent that overflows size_t or exceeds PTRDIFF_MAX bytes, misaligned scores),
 * and slopes that lie within the scores' address range (from the first to the last
 * score, gaps included). Any count 0 is a valid no-op that reads no slope or score (flags,
 * scale and the position limits are still checked). */
POSENC_API posenc_status posenc_alibi_softmax_f32(const float *slopes, size_t n_heads, size_t n_q,
                                                  size_t n_k, size_t q_offset, float *scores,
                                                  size_t head_stride, size_t row_stride,
                                                  float scale, unsigned flags);

/** posenc_alibi_softmax_f32 on bf16 scores (uint16_t holding the upper half of a float,
 * 2-byte aligned): posenc_softmax with x = y = the bf16 scores. The result equals, bit for
 * bit, bf16(posenc_alibi_softmax_f32 on the widened scores) with the same ISA. Arguments and
 * errors as for posenc_alibi_softmax_f32. */
POSENC_API posenc_status posenc_alibi_softmax_bf16(const float *slopes, size_t n_heads, size_t n_q,
                                                   size_t n_k, size_t q_offset, uint16_t *scores,
                                                   size_t head_stride, size_t row_stride,
                                                   float scale, unsigned flags);

/** @} */

/* --------------------------------------------------------------------------------------- */
/** \defgroup softmax The attention-score softmax
 *
 * One fused row softmax for attention scores as runtimes call it (llama.cpp's
 * ggml_soft_max_ext, PyTorch's SDPA with a mask, FlashAttention's masking): for head h,
 * query row i and key column j,
 *     t_ij = s(scale * x_ij) + mask_ij + bias_hij,      s(u) = c * tanh(u / c) or u
 *     y_ij = exp(t_ij - M_i) / (sum_k exp(t_ik - M_i) + exp(sink_h - M_i)),
 *     M_i  = max(max_k t_ik, sink_h)
 * over the row's visible keys (hidden keys: y = +0, their x never used), where
 *  - mask (optional): f32 or f16 values [n_q, n_k], shared by the heads or one per head,
 *    or broadcast by ggml's rule (ggml_soft_max_ext's mask [n_k, n_q, Hm, Bm]: head h of
 *    batch b reads mask head h % Hm of mask batch b % Bm; params.mask_n_heads = Hm and
 *    params.mask_n_batch = Bm, n_heads and n_batch multiples of them, as ggml asserts);
 *    a key whose mask value is -inf is hidden (its score is not used, even if NaN);
 *  - bias (optional, with slopes): ALiBi, slope_h * (kpos_j - qpos_i) as a float product
 *    of the int32 difference converted to float (llama.cpp and HF's BLOOM/MPT form: for
 *    the visible keys of a causal row it is -slope_h * |qpos_i - kpos_j|); with
 *    POSENC_SOFTMAX_ALIBI_SYMMETRIC -(slope_h * |kpos_j - qpos_i|) (posenc_alibi_add_f32's);
 *    with POSENC_SOFTMAX_MASK_SLOPE ggml's form instead: no position term and the mask
 *    term is slope_h * mask_ij (ggml passes -|qpos - kpos| in its mask for ALiBi models);
 *  - key positions kpos_j = kpos[j] (or kpos64[j], int64 within the int32 range: the same
 *    result; or j) and query positions qpos_i = qpos[i] (or qpos64[i]; or q_offset + i)
 *    give POSENC_SOFTMAX_CAUSAL (kpos_j > qpos_i hidden) and POSENC_SOFTMAX_WINDOW (qpos_i -
 *    kpos_j >= window hidden: a sliding window of `window` keys ending at the query,
 *    Mistral's and Gemma's, ggml's SWA "standard");
 *  - a key position below 0 marks an empty KV-cache cell (llama.cpp's -1): allowed only
 *    where the key is hidden, by a -inf mask value in every row of every head (of every
 *    mask slice the call uses, with a broadcast mask and batches) or by
 *    POSENC_SOFTMAX_KPOS_NEG_HIDDEN (which hides every such key); causal and window do not
 *    count (such a key is never hidden by its position). Without the flag, a call with a
 *    negative kpos reads the mask at those keys once more, before anything is written;
 *  - sink (optional, per head): an extra logit in the denominator only (gpt-oss, ggml's
 *    sinks); it is used as it is (not scaled, capped or biased).
 * Each operation rounds to float in the order written: u = scale * x, s(u), + mask
 * (or + slope * mask), + bias (or - slope * |d|).
 *
 * Special values:
 *  - a row with no visible key, or whose visible t are all -inf, becomes all +0 (a sink
 *    does not change that). PyTorch's softmax gives NaN there (exp(-inf - -inf)); zeros
 *    make such a query add nothing to the attention output, as fused attention kernels do.
 *  - t = -inf gives +0: a row of -inf but one finite value gives exactly 1 there (less
 *    with a sink).
 *  - a NaN t of a visible key (a NaN score; scale 0 times an infinite score) makes every
 *    visible y of its row NaN (payload unspecified); hidden keys still get +0.
 *  - a +inf t (an infinite score, or an overflow) makes every visible y of its row NaN,
 *    as exp(inf - inf) does in IEEE arithmetic (and in PyTorch). With soft-capping an
 *    infinite score is capped to +-c first (tanh(+-inf) = +-1).
 *  - no subnormal is produced or stored: e = exp(t - M) is +0 where t - M is below
 *    ln(2 (n_k + 1) FLT_MIN) (rounded up to float: -85.54 for 2 keys, -78.3 for 4096,
 *    -65.2 for 2^31), so every y is +0 or at least 2 FLT_MIN; what is dropped is below
 *    2^-93. MXCSR/FPCR are not touched.
 *
 * Accuracy: every variant's y_ij is within
 *     POSENC_SOFTMAX_REL_TOLERANCE * y*_ij + POSENC_SOFTMAX_ABS_TOLERANCE
 * of y*_ij, the exact real softmax (with the sink) of the float t_ij above, for rows of up
 * to 2^31 keys: t - M rounded to float costs |t - M| 2^-24 relative (covered by the
 * absolute term beyond |t - M| > 16); exp is posenc's own (a degree-5 polynomial after
 * the reduction by ln 2, in the vector layer), within 2.6 ulp for arguments in [-16, 0]
 * and 2.9 ulp in [0, 18] (soft-capping's), up to 5 ulp below -16 where the fused one-step
 * reduction adds |n| 1.9e-9 (absorbed there by the absolute term): measured against expl
 * over every float argument; the sum is single precision in lanes of at most 8 terms
 * each, added in double per span of 16 vectors (relative error below 2^-21); 1/sum and the
 * product round once each; a 16-bit y rounds once more (relative 2^-8 bf16, 2^-11 f16, on
 * top). With soft-capping, s is computed through exp as c * (1 - 2 / (exp(2u/c) + 1))
 * (u/c clamped to +-9): |s - c tanh(u/c)| <= c * 2^-21, which adds that much relative
 * error to y: the bound then is against the exact softmax of the exact c tanh(u/c) + mask
 * + bias with REL_TOLERANCE + c * 2^-20. Variants differ in the last bits only (fused
 * multiply-add or not, the order of the sum lanes); the results do not depend on how the
 * rows are split between calls or threads: each row's result depends only on that row's
 * inputs.
 *
 * Speed: each row is read once and written once in memory; its passes (t and M; exp and
 * sum; normalise) run over a work block in cache (the f32 output row itself, else 16 KiB
 * on the stack; a row of more than 4096 visible keys with a 16-bit output computes t and
 * exp twice per key). With no key positions the visible columns of a causal or windowed
 * row are found from the positions, and hidden columns are not read. f32 scores into an
 * f32 y without soft-capping, ALiBi (slopes or MASK_SLOPE) or hiding by key positions (the
 * causal, window or KPOS_NEG_HIDDEN flags with kpos) go through a pipeline of three rows
 * (each row's first pass runs in one loop with the second pass of the row before and the
 * third of the one before that, on ISAs with 32 vector registers; results are the same
 * bits as row by row). Such a call out of place whose y holds 16 MiB or more, with rows of
 * at most 1024 keys, writes y with non-temporal stores on sse4, avx2 and avx512 (fenced
 * before the call returns: y would evict most of a last-level cache anyway, and its lines
 * are then not read first).
 * @{
 */

#define POSENC_SOFTMAX_REL_TOLERANCE 3.814697265625e-06     /**< 2^-18 */
#define POSENC_SOFTMAX_ABS_TOLERANCE 5.9604644775390625e-08 /**< 2^-24 */
/* The former names of the two tolerances. */
#define POSENC_ALIBI_SOFTMAX_REL_TOLERANCE POSENC_SOFTMAX_REL_TOLERANCE
#define POSENC_ALIBI_SOFTMAX_ABS_TOLERANCE POSENC_SOFTMAX_ABS_TOLERANCE

enum {
  POSENC_SOFTMAX_CAUSAL = 1u << 0,  /**< hide keys with kpos_j > qpos_i */
  POSENC_SOFTMAX_WINDOW = 1u << 1,  /**< hide keys with qpos_i - kpos_j >= params.window */
  POSENC_SOFTMAX_SOFTCAP = 1u << 2, /**< s(u) = c tanh(u / c), c = params.softcap */
  /** ALiBi bias -(slope_h * |kpos_j - qpos_i|) instead of slope_h * (kpos_j - qpos_i) */
  POSENC_SOFTMAX_ALIBI_SYMMETRIC = 1u << 3,
  /** ggml's ALiBi: the mask term is slope_h * mask_ij and there is no position term */
  POSENC_SOFTMAX_MASK_SLOPE = 1u << 4,
  /** hide every key with kpos_j < 0 (as if its mask value were -inf, in every row): a
   * KV cache's empty cells, which llama.cpp marks with position -1. Without it a negative
   * key position is only allowed where the mask hides the key. No effect without kpos. */
  POSENC_SOFTMAX_KPOS_NEG_HIDDEN = 1u << 5
};

/** The options of posenc_softmax. Start from POSENC_SOFTMAX_PARAMS_INIT (scale 1, nothing
 * else) and set what the call needs. */
typedef struct posenc_softmax_params {
  float scale;             /**< multiplies every score first; finite */
  float softcap;           /**< c, with POSENC_SOFTMAX_SOFTCAP: finite, > 0 */
  const float *slopes;     /**< n_heads finite ALiBi slopes, or NULL: no bias */
  const float *sinks;      /**< n_heads finite sink logits, or NULL: none */
  const void *mask;        /**< NULL, or mask_dtype values: row i of head h at
                                mask + h * mask_head_stride + i * mask_row_stride (with
                                mask_n_heads / mask_n_batch: ggml's broadcast, below) */
  posenc_dtype mask_dtype; /**< POSENC_DTYPE_F32 or POSENC_DTYPE_F16 */
  size_t mask_row_stride;  /**< elements; 0 means n_k, else >= n_k */
  size_t mask_head_stride; /**< elements; 0: one mask for every head */
  const int32_t *kpos;     /**< n_k key positions, or NULL: kpos_j = j; a kpos_j < 0
                                only at a hidden key (mask -inf in every row, or
                                POSENC_SOFTMAX_KPOS_NEG_HIDDEN) */
  const int32_t *qpos;     /**< n_q query positions >= 0, or NULL: q_offset + i */
  int32_t q_offset;        /**< >= 0, q_offset + n_q - 1 <= INT32_MAX; unused with qpos */
  int32_t window;          /**< with POSENC_SOFTMAX_WINDOW: >= 1 */
  unsigned flags;          /**< POSENC_SOFTMAX_* */
  /* Appended in 0.2.0 (zero in POSENC_SOFTMAX_PARAMS_INIT: the rules above). */
  size_t mask_n_heads;      /**< 0: mask_head_stride's rule above; else the mask holds this
                                 many heads, mask_head_stride apart, and head h uses mask
                                 head h % mask_n_heads (ggml's rule: n_heads must be a
                                 multiple of it) */
  size_t mask_batch_stride; /**< elements between the masks of two batches (see next) */
  size_t mask_n_batch;      /**< 0 or 1: one mask for every batch; else batch b uses mask
                                 batch b % mask_n_batch, at (b % mask_n_batch) *
                                 mask_batch_stride (n_batch must be a multiple of it) */
  const int64_t *kpos64;    /**< kpos as int64 (vLLM's, FlashInfer's), or NULL; at most one
                                 of kpos and kpos64; every value within int32 */
  const int64_t *qpos64;    /**< qpos as int64, or NULL; at most one of qpos and qpos64;
                                 every value within int32 */
} posenc_softmax_params;

/** scale 1, no soft-capping, slopes, sinks, mask or positions, flags 0: a plain softmax. */
#define POSENC_SOFTMAX_PARAMS_INIT                                                             \
  {                                                                                            \
    1.0f, 0.0f, NULL, NULL, NULL, POSENC_DTYPE_F32, 0, 0, NULL, NULL, 0, 0, 0u, 0, 0, 0, NULL, \
        NULL                                                                                   \
  }

/** Scores of n_heads heads of n_q rows of n_k keys: element j of row i of head h at
 * data[h * head_stride + i * row_stride + j] (strides in elements of dtype, the row
 * stride 0 meaning n_k). Rows nest in heads ([H, n_q, n_k]) or heads in rows ([n_q, H,
 * n_k], head_stride >= n_k); a destination's rows must not overlap each other. */
typedef struct posenc_scores_view {
  void *data;
  posenc_dtype dtype; /**< f32, bf16 or f16 */
  size_t head_stride;
  size_t row_stride;
  size_t batch_stride; /**< posenc_softmax_batched only (posenc_softmax ignores it): batch b
                            at data + b * batch_stride; 0 with n_batch > 1 repeats x (not
                            allowed for y) */
} posenc_scores_view;

/** y = the softmax above of the scores x, n_heads x n_q x n_k. x and y may be the same view
 * (same data, dtype and strides: in place) or apart (any other overlap is an error); their
 * dtypes are independent (f32, bf16, f16: bf16 scores into f32 probabilities, f32 into
 * bf16, ...). A 16-bit x is widened exactly; a 16-bit y is the f32 result rounded to
 * nearest even (bit for bit the f32 call's result rounded). The mask, slopes, sinks and
 * positions must not lie in y's address range.
 * Errors (nothing written): POSENC_ERR_INVALID_ARGUMENT for a NULL params, x or y, NULL
 * data with work to do, an unknown dtype or a mask dtype other than f32 / f16, unknown
 * flags, a non-finite scale, slope or sink, POSENC_SOFTMAX_SOFTCAP with c <= 0 or not
 * finite, POSENC_SOFTMAX_WINDOW with window < 1, POSENC_SOFTMAX_MASK_SLOPE without a mask
 * or slopes, a mask row stride below n_k, a negative position (qpos, or q_offset when
 * there is no qpos; a kpos_j < 0 at a key that the mask does not hide, -inf, in some row,
 * unless POSENC_SOFTMAX_KPOS_NEG_HIDDEN), a query run past INT32_MAX (no qpos), more than
 * 2^31 keys without kpos, an x row stride below n_k (x is only read: its heads may
 * repeat, head stride 0), a y whose rows overlap, a view whose extent overflows (or
 * exceeds PTRDIFF_MAX bytes), x and y overlapping other than in place, the mask, slopes,
 * sinks or positions within y's extent, misaligned data, a mask that does not broadcast
 * (n_heads not a multiple of mask_n_heads; mask_n_batch > 1 here: one batch), both kpos and
 * kpos64 (or qpos and qpos64) set, a kpos64 or qpos64 value outside the int32 range. Any
 * count 0 is a valid no-op that reads nothing (the flags and the parameters' values that
 * need no array are still checked). The views' batch_stride is not read.
 * POSENC_ERR_OUT_OF_MEMORY (nothing written) if int64 positions of more than 1024 keys or
 * queries cannot be converted to int32 in a heap buffer. */
POSENC_API posenc_status posenc_softmax(const posenc_softmax_params *params, size_t n_heads,
                                        size_t n_q, size_t n_k, const posenc_scores_view *x,
                                        const posenc_scores_view *y);

/** posenc_softmax over n_batch batches of n_heads x n_q x n_k scores, as ggml_soft_max_ext
 * takes a 4-D tensor [n_k, n_q, n_heads, n_batch] and as a runtime holds [B, H, q, k]:
 * element j of row i of head h of batch b at data[b * batch_stride + h * head_stride + i *
 * row_stride + j] (the views' batch_stride, in elements). Batch b's result is bit for bit
 * posenc_softmax on that batch's x and y with the mask of that batch (mask batch b %
 * mask_n_batch, mask_batch_stride apart, when mask_n_batch > 1); the slopes, sinks and
 * positions are per head and shared by every batch. x's batch_stride may be 0 (x is read
 * only: every batch reads the same scores); y's rows must not overlap across batches either
 * (batch_stride 0 with n_batch > 1 is an error for y). Every check of every batch is made
 * before anything is written. Errors: posenc_softmax's (for the 4-D extents) and a mask that
 * does not broadcast (n_batch not a multiple of mask_n_batch, n_heads not a multiple of
 * mask_n_heads), y batches that overlap each other, a 4-D extent that overflows. n_batch 0
 * is a valid no-op; n_batch 1 is posenc_softmax. */
POSENC_API posenc_status posenc_softmax_batched(const posenc_softmax_params *params, size_t n_batch,
                                                size_t n_heads, size_t n_q, size_t n_k,
                                                const posenc_scores_view *x,
                                                const posenc_scores_view *y);

/** @} */

/* --------------------------------------------------------------------------------------- */
/** \defgroup learned Learned position embeddings
 * @{
 */

/** x[t][j] += table[pos_t][j] for t in [0, n_tokens), j in [0, dim): row pos_t of a
 * [max_pos, dim] table (row r at table + r * table_stride) gathered by the token's position
 * and added to its embedding (row t at x + t * x_stride), in place. pos_t = positions[t],
 * or, if positions is NULL, start_pos + t (seed 003's apply_learned is start_pos = 0).
 * Strides: 0 means dim, else >= dim. The sum is one float addition per element, so every
 * variant's output is bit-identical to the scalar reference's.
 * Errors (nothing written): a position outside [0, max_pos) (every position is checked
 * before anything is written, also when dim = 0), start_pos + n_tokens - 1 > INT32_MAX,
 * NULL table or x with work to do, 0 < stride < dim, x's address range intersecting the
 * table's (even x rows placed in the gaps between table rows), overflowing
 * extents, misaligned pointers. n_tokens = 0 is a valid no-op; dim = 0 writes nothing. */
POSENC_API posenc_status posenc_learned_add_f32(const float *table, size_t max_pos,
                                                size_t table_stride, size_t dim, size_t n_tokens,
                                                const int32_t *positions, int32_t start_pos,
                                                float *x, size_t x_stride);

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* POSENC_H */
