/* Shared parts of the libFuzzer differential targets over the public API (one target per
 * kernel family: fuzz_rope, fuzz_mrope, fuzz_rerotate, fuzz_rope_views, fuzz_sinusoid,
 * fuzz_alibi, fuzz_learned, fuzz_softmax; scripts/test-fuzz.sh builds and runs them).
 * fuzz_rope_views, whose calls are sequences (compute, then apply) over several buffers, has
 * its own driver on the same conventions and uses the reader and comparison helpers below.
 *
 * Each input is decoded by a small cursor reader (bytes past the end read as 0; tensor data
 * past the end comes from a PRNG seeded by the input) into one call of one entry point of
 * the target's family: byte 0 picks the entry point among the target's (fuzz_learned and
 * fuzz_softmax have one and no such byte), byte 1 (misc) a NULL tensor (misc % 32 == 0) or a
 * pointer misaligned by the next byte % 3 + 1 bytes (misc % 32 == 1), then for the families
 * stored in bf16 or f16 a byte picks the type; the target's decoder reads the rest: small shapes,
 * strides that are sometimes invalid, overlapping or huge, flags with unknown bits,
 * positions near the int32 limits, plan parameters, slopes and scales incl. NaN, and the
 * tensor data incl. NaN/Inf/subnormal.
 *
 * fuzz_one makes the call on a copy of the same buffer with the scalar ISA and with every
 * other available ISA (posenc_set_isa). Every tensor lives in one "arena" with guard
 * regions before and after it, filled with a sentinel and poisoned for AddressSanitizer
 * during the call. Required, else abort():
 *  - every ISA returns the same status;
 *  - a call with an argument posenc.h lists as an error (c->must_fail) fails;
 *  - on error, the arena and guards are unchanged bit for bit;
 *  - on success, the guards and every element the call may not write are unchanged; an
 *    accepted call never has overlapping outputs; the written elements match scalar within
 *    the family's bound (the target's check_values) and its semantic oracles hold (the
 *    target's check_accepted, in scalar).
 * 16-bit tensors are stored two elements to an arena float and checked per 16-bit half.
 * fuzz/make_corpus.py writes the seed corpus (fuzz/corpus/<target>/) in this format. */
#ifndef POSENC_FUZZ_COMMON_H
#define POSENC_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "posenc.h"

/* ASan's poisoning of guard regions where the build has ASan; nothing otherwise. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#endif
#endif
#ifndef POISON
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define GUARD 64             /* floats before and after the arena */
#define MAX_ARENA (1u << 18) /* floats; far above what the decoded shapes need */
/* Counts and strides this large must overflow: their extents exceed PTRDIFF_MAX bytes even
 * for 2-byte elements (1 << 61 did only for floats: a 16-bit call with such a stride spans
 * 2^62 bytes, which the library must accept, and then touches memory that is not there). */
#define HUGE_BASE ((size_t)1 << 62)

/* ---------------------------------------------------------------------- cursor reader */

typedef struct reader {
  const uint8_t *p;
  size_t n;
  uint64_t rng; /* data past the end of the input */
} reader;

uint8_t u8(reader *r);
uint16_t u16(reader *r);
uint32_t u32(reader *r);
uint64_t u64(reader *r);
double bits_double(uint64_t b);

float special_float(unsigned k, uint32_t raw);
size_t count(reader *r, size_t max, int huge);
size_t stride(reader *r, size_t natural, int *huge);
uint32_t flags_of(reader *r, uint32_t known);
int32_t special_position(reader *r);
int32_t *positions_of(reader *r, size_t n, int32_t *start_pos);
double param(reader *r, const double *common, size_t n_common);
double freq(reader *r);

/* ---------------------------------------------------------------------- one decoded call */

/* The part of a decoded call that fuzz_one reads; a target's call embeds it first. Tensors
 * are element offsets into one arena of `len` floats (16-bit tensors: two to a float). */
typedef struct call {
  const char *target; /* "fuzz_rope", ...: messages */
  int family;         /* the entry point within the target (byte 0) */
  int halves;         /* 16-bit elements: marked and checked per 16-bit half */
  int bf16;           /* with halves: bf16 storage, else f16 */
  size_t len;         /* arena floats */
  float *input;       /* the arena's initial contents */
  uint8_t *touched;   /* per float (halves: per 16-bit half): output elements mapped to it */
  unsigned misalign;  /* bytes added to the tensor pointers (0: aligned) */
  int null_data;      /* pass NULL for the (first) tensor */
  int must_fail;      /* an argument posenc.h lists as an error: the call must fail */
} call;

/* Reads misc (and the misalignment byte it asks for) and, with typed16, the storage byte
 * (sets halves and bf16); returns misc. */
uint8_t decode_header(reader *r, call *c, int typed16);

float *arena_f32(const call *c, float *arena, size_t off);
void *arena_16(const call *c, float *arena, size_t off);

size_t span(size_t count_a, size_t stride_a, size_t count_b, size_t stride_b, size_t width);
size_t max_size(size_t a, size_t b);
int32_t wrap32(int64_t x);
void touch(call *c, size_t i);
void touch_grid(call *c, size_t off, size_t na, size_t sa, size_t nb, size_t sb, size_t width);

/* ---------------------------------------------------------------------- comparison */

typedef struct run_result {
  posenc_status status;
  float *buf; /* GUARD + len + GUARD floats */
} run_result;

_Noreturn void violation(const call *c, const char *isa, const char *what, size_t index, float got,
                         float want);
int within_range(float got, float want, double bound, double max_finite);
int within(float got, float want, double bound);
int same_value(float got, float want);
uint16_t half_of(const float *buf, size_t h);
float widen16(const call *c, uint16_t h);
double finite_mag(double a, double b);
double storage_ulp(const call *c, double mag);
double storage_max(const call *c);

/* Calls fn for every element an accepted call wrote: its arena float index, and the
 * result's and scalar's values (16-bit halves widened). */
typedef void (*element_fn)(const call *c, const char *isa, size_t index, float got, float want);
void each_written(const call *c, const char *isa, const run_result *res, const run_result *scalar,
                  element_fn fn);

void fill_buffer(const call *c, float *buf);

/* ---------------------------------------------------------------------- the target */

typedef struct fuzz_target {
  const char *name;
  /* A new call decoded from r (its arena size set), or NULL to skip the input. */
  call *(*decode)(reader *r);
  /* Marks the elements an accepted call writes (c->touched allocated). */
  void (*mark_outputs)(call *c);
  posenc_status (*invoke)(const call *c, float *arena);
  /* The written values of an accepted call against scalar's. */
  void (*check_values)(const call *c, const char *isa, const run_result *res,
                       const run_result *scalar);
  /* Checks of an accepted call's scalar result beyond the differential; may be NULL. */
  void (*check_accepted)(const call *c, const run_result *scalar);
  void (*destroy)(call *c);
} fuzz_target;

int fuzz_one(const fuzz_target *t, const uint8_t *data, size_t size);

/* The target's libFuzzer entry point. */
#define FUZZ_TARGET(t)                                           \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);  \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { \
    return fuzz_one(&(t), data, size);                           \
  }

#endif
