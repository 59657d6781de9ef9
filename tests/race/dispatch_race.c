/* The dispatcher under concurrency, in a fresh process (run it under ThreadSanitizer:
 * scripts/test-tsan.sh).
 *
 * Phase 1: N threads (argv[1], default 8) wait on a barrier and then all make their FIRST
 * posenc call at the same moment; each thread starts with a different entry point
 * (posenc_active_isa, posenc_rope_f32, posenc_sinusoid_fill_f32, posenc_alibi_add_f32,
 * posenc_learned_add_f32) and then makes the others. After joining, the same calls made on
 * one thread must give bit-identical results (same ISA, same variant).
 *
 * Phase 2: one thread cycles posenc_set_isa() through every available ISA while the other
 * threads call the kernels in a loop (argv[2] iterations, default 200); every result must be
 * bit-identical to the result of one ISA's variant (posenc.h: each kernel call uses one
 * variant from start to end).
 *
 * Phase 3 (split invariance, posenc.h): for every available ISA, the threads rotate (RoPE,
 * in place) and fill (sinusoid) disjoint, uneven slices of one buffer at the same time; the
 * result must be bit-identical to one call over the whole buffer.
 *
 * Exit status: 0 on success, 1 on any mismatch, 2 on a setup failure. Plain C and pthreads. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "posenc.h"

/* Problem sizes: a few tokens, odd widths so that every variant runs its tail code. */
enum {
  ROPE_TOKENS = 9,
  ROPE_HEADS = 3,
  ROPE_DIM = 80,
  ROPE_ROTARY = 64,
  ROPE_SIZE = ROPE_TOKENS * ROPE_HEADS * ROPE_DIM,
  SIN_ROWS = 13,
  SIN_DIM = 47,
  SIN_SIZE = SIN_ROWS * SIN_DIM,
  ALIBI_HEADS = 5,
  ALIBI_NQ = 6,
  ALIBI_NK = 37,
  ALIBI_SIZE = ALIBI_HEADS * ALIBI_NQ * ALIBI_NK,
  LEARNED_POS = 50,
  LEARNED_DIM = 29,
  LEARNED_TOKENS = 11,
  LEARNED_SIZE = LEARNED_TOKENS * LEARNED_DIM,
  N_KERNELS = 4
};

/* One set of results: the active ISA and the four kernels' outputs. */
typedef struct results {
  int isa;
  posenc_status status[N_KERNELS];
  float rope[ROPE_SIZE];
  float sinusoid[SIN_SIZE];
  float alibi[ALIBI_SIZE];
  float learned[LEARNED_SIZE];
} results;

/* Inputs shared by every thread (read only once created). */
static posenc_rope_plan *rope_plan;
static posenc_sinusoid_plan *sin_plan;
static int32_t rope_positions[ROPE_TOKENS];
static int32_t learned_positions[LEARNED_TOKENS];
static float rope_input[ROPE_SIZE];
static float alibi_input[ALIBI_SIZE];
static float alibi_slopes[ALIBI_HEADS];
static float learned_table[LEARNED_POS * LEARNED_DIM];
static float learned_input[LEARNED_SIZE];

static pthread_barrier_t barrier;
static int n_threads = 8;
static long iterations = 200;
static results expected[POSENC_ISA_COUNT];
static int available[POSENC_ISA_COUNT], n_available;
static int stop_switching; /* atomic */
static long failures;      /* atomic */

static void fail(const char *what) {
  __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
  fprintf(stderr, "dispatch_race: %s\n", what);
}

static void run_kernel(int kernel, results *r) {
  switch (kernel) {
    case 0: {
      memcpy(r->rope, rope_input, sizeof r->rope);
      const posenc_rope_tensor q = {r->rope, 2, ROPE_HEADS * ROPE_DIM, ROPE_DIM};
      const posenc_rope_tensor k = {r->rope + 2 * ROPE_DIM, 1, ROPE_HEADS * ROPE_DIM, ROPE_DIM};
      r->status[0] = posenc_rope_f32(rope_plan, ROPE_DIM, ROPE_TOKENS, rope_positions, 0, &q, &k,
                                     POSENC_ROPE_NEOX);
      break;
    }
    case 1:
      /* Consecutive positions: the SIMD variants step cos/sin (re-anchored every 256 rows). */
      memset(r->sinusoid, 0, sizeof r->sinusoid);
      r->status[1] = posenc_sinusoid_fill_f32(sin_plan, SIN_ROWS, NULL, 1000003, r->sinusoid, 0,
                                              POSENC_SINUSOID_INTERLEAVED);
      break;
    case 2:
      memcpy(r->alibi, alibi_input, sizeof r->alibi);
      r->status[2] = posenc_alibi_add_f32(alibi_slopes, ALIBI_HEADS, ALIBI_NQ, ALIBI_NK,
                                          ALIBI_NK - ALIBI_NQ, r->alibi, ALIBI_NQ * ALIBI_NK,
                                          ALIBI_NK, 0.125f, POSENC_ALIBI_CAUSAL);
      break;
    default:
      memcpy(r->learned, learned_input, sizeof r->learned);
      r->status[3] = posenc_learned_add_f32(learned_table, LEARNED_POS, 0, LEARNED_DIM,
                                            LEARNED_TOKENS, learned_positions, 0, r->learned, 0);
      break;
  }
}

/* posenc_active_isa and the four kernels; `first` chooses the first call: 0 for
 * posenc_active_isa, 1 + k for kernel k (rope, sinusoid, alibi, learned). */
static void run_all(int first, results *r) {
  if (first == 0) r->isa = (int)posenc_active_isa();
  const int k0 = first == 0 ? 0 : first - 1;
  for (int i = 0; i < N_KERNELS; ++i) run_kernel((k0 + i) % N_KERNELS, r);
  if (first != 0) r->isa = (int)posenc_active_isa();
}

static int same_kernel(int kernel, const results *a, const results *b) {
  if (a->status[kernel] != b->status[kernel]) return 0;
  switch (kernel) {
    case 0:
      return memcmp(a->rope, b->rope, sizeof a->rope) == 0;
    case 1:
      return memcmp(a->sinusoid, b->sinusoid, sizeof a->sinusoid) == 0;
    case 2:
      return memcmp(a->alibi, b->alibi, sizeof a->alibi) == 0;
    default:
      return memcmp(a->learned, b->learned, sizeof a->learned) == 0;
  }
}

typedef struct worker {
  pthread_t thread;
  int index;
  results *r;
} worker;

static void *first_call(void *arg) {
  worker *w = arg;
  pthread_barrier_wait(&barrier);
  run_all(w->index % (N_KERNELS + 1), w->r);
  return NULL;
}

static void *switcher(void *arg) {
  (void)arg;
  pthread_barrier_wait(&barrier);
  for (unsigned long i = 0; !__atomic_load_n(&stop_switching, __ATOMIC_ACQUIRE); ++i)
    if (posenc_set_isa((posenc_isa)available[i % (unsigned long)n_available]) != POSENC_OK)
      fail("posenc_set_isa refused an available ISA");
  return NULL;
}

static void *kernel_loop(void *arg) {
  worker *w = arg;
  pthread_barrier_wait(&barrier);
  for (long it = 0; it < iterations; ++it) {
    const int kernel = (int)((it + w->index) % N_KERNELS);
    run_kernel(kernel, w->r);
    int matched = 0;
    for (int i = 0; i < n_available && !matched; ++i)
      matched = same_kernel(kernel, w->r, &expected[available[i]]);
    if (!matched) {
      char msg[128];
      snprintf(msg, sizeof msg, "phase 2: thread %d, kernel %d: result matches no ISA's variant",
               w->index, kernel);
      fail(msg);
    }
  }
  return NULL;
}

/* Phase 3's buffer: SPLIT_TOKENS tokens (RoPE) and rows (sinusoid). */
enum { SPLIT_TOKENS = 301, SPLIT_ROPE = SPLIT_TOKENS * ROPE_HEADS * ROPE_DIM };
static float split_input[SPLIT_ROPE];

static float pseudo_random(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((int32_t)(*state >> 8) - (1 << 23)) / (float)(1 << 22); /* [-2, 2) */
}

static int setup(void) {
  if (posenc_rope_plan_create(&rope_plan, ROPE_ROTARY, 10000.0, 1.0) != POSENC_OK ||
      posenc_sinusoid_plan_create(&sin_plan, SIN_DIM, 10000.0) != POSENC_OK ||
      posenc_alibi_slopes(ALIBI_HEADS, 8.0, alibi_slopes) != POSENC_OK)
    return 0;
  uint32_t s = 12345;
  for (int t = 0; t < ROPE_TOKENS; ++t)
    rope_positions[t] = t < 5 ? 131000 + t : (t == 5 ? INT32_MAX : -7 * t);
  for (int i = 0; i < ROPE_SIZE; ++i) rope_input[i] = pseudo_random(&s);
  for (int i = 0; i < SPLIT_ROPE; ++i) split_input[i] = pseudo_random(&s);
  for (int i = 0; i < ALIBI_SIZE; ++i) alibi_input[i] = pseudo_random(&s);
  for (int i = 0; i < LEARNED_POS * LEARNED_DIM; ++i) learned_table[i] = pseudo_random(&s);
  for (int i = 0; i < LEARNED_SIZE; ++i) learned_input[i] = pseudo_random(&s);
  for (int t = 0; t < LEARNED_TOKENS; ++t) learned_positions[t] = (t * 17) % LEARNED_POS;
  return 1;
}

/* Phase 3: split invariance. One buffer of SPLIT_TOKENS tokens (RoPE) and rows (sinusoid),
 * cut into n_threads uneven slices; each thread rotates and fills its own slice. */
static float split_rope[SPLIT_ROPE], split_sin[SPLIT_TOKENS * SIN_DIM];

static size_t split_cut(int j) { /* slice j is [cut(j), cut(j + 1)) */
  if (j <= 0) return 0;
  if (j >= n_threads) return SPLIT_TOKENS;
  return (size_t)SPLIT_TOKENS * (size_t)j / (size_t)n_threads + (size_t)(j % 3) * 11;
}

static int split_slice(float *rope, float *sin_rows, size_t t0, size_t t1) {
  const posenc_rope_tensor q = {rope + t0 * ROPE_HEADS * ROPE_DIM, 2, ROPE_HEADS * ROPE_DIM,
                                ROPE_DIM};
  const posenc_rope_tensor k = {rope + t0 * ROPE_HEADS * ROPE_DIM + 2 * ROPE_DIM, 1,
                                ROPE_HEADS * ROPE_DIM, ROPE_DIM};
  const int32_t start = 1000 + (int32_t)t0;
  return posenc_rope_f32(rope_plan, ROPE_DIM, t1 - t0, NULL, start, &q, &k, POSENC_ROPE_NEOX) ==
             POSENC_OK &&
         posenc_sinusoid_fill_f32(sin_plan, t1 - t0, NULL, start, sin_rows + t0 * SIN_DIM, 0,
                                  POSENC_SINUSOID_INTERLEAVED) == POSENC_OK;
}

static void *split_worker(void *arg) {
  const worker *w = arg;
  if (!split_slice(split_rope, split_sin, split_cut(w->index), split_cut(w->index + 1)))
    fail("phase 3: a slice failed");
  return NULL;
}

static void split_phase(worker *workers) {
  static float one_rope[SPLIT_ROPE], one_sin[SPLIT_TOKENS * SIN_DIM];
  for (int v = 0; v < n_available; ++v) {
    if (posenc_set_isa((posenc_isa)available[v]) != POSENC_OK) fail("phase 3: set_isa");
    memcpy(one_rope, split_input, sizeof one_rope);
    memcpy(split_rope, split_input, sizeof split_rope);
    if (!split_slice(one_rope, one_sin, 0, SPLIT_TOKENS)) fail("phase 3: one call failed");
    for (int i = 0; i < n_threads; ++i) {
      workers[i] = (worker){.index = i};
      if (pthread_create(&workers[i].thread, NULL, split_worker, &workers[i]) != 0)
        fail("phase 3: pthread_create");
    }
    for (int i = 0; i < n_threads; ++i) pthread_join(workers[i].thread, NULL);
    if (memcmp(one_rope, split_rope, sizeof one_rope) != 0)
      fail("phase 3: RoPE split over threads differs from one call");
    if (memcmp(one_sin, split_sin, sizeof one_sin) != 0)
      fail("phase 3: sinusoid split over threads differs from one call");
  }
}

int main(int argc, char **argv) {
  if (argc > 1) n_threads = atoi(argv[1]);
  if (argc > 2) iterations = atol(argv[2]);
  if (n_threads < 2 || n_threads > 256 || iterations < 1) {
    fprintf(stderr, "usage: %s [threads (2..256, default 8)] [phase-2 iterations]\n", argv[0]);
    return 2;
  }
  /* Nothing before the barrier may reach the dispatcher: plan creation and slopes do not. */
  if (!setup()) {
    fprintf(stderr, "dispatch_race: setup failed\n");
    return 2;
  }
  worker *workers = calloc((size_t)n_threads, sizeof *workers);
  results *res = calloc((size_t)n_threads, sizeof *res);
  results *single = calloc(1, sizeof *single);
  if (!workers || !res || !single) return 2;

  /* Phase 1: every thread's first posenc call at the same moment. */
  pthread_barrier_init(&barrier, NULL, (unsigned)n_threads);
  for (int i = 0; i < n_threads; ++i) {
    workers[i] = (worker){.index = i, .r = &res[i]};
    if (pthread_create(&workers[i].thread, NULL, first_call, &workers[i]) != 0) return 2;
  }
  for (int i = 0; i < n_threads; ++i) pthread_join(workers[i].thread, NULL);
  pthread_barrier_destroy(&barrier);

  run_all(0, single);
  for (int k = 0; k < N_KERNELS; ++k)
    if (single->status[k] != POSENC_OK) fail("phase 1: a kernel failed on the main thread");
  for (int i = 0; i < n_threads; ++i) {
    if (res[i].isa != single->isa) fail("phase 1: threads saw different active ISAs");
    for (int k = 0; k < N_KERNELS; ++k)
      if (!same_kernel(k, &res[i], single)) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "phase 1: thread %d, kernel %d differs from the single-threaded result", i, k);
        fail(msg);
      }
  }

  /* Per-ISA expected results, single-threaded. */
  const posenc_isa initial = posenc_active_isa();
  for (int isa = 0; isa < POSENC_ISA_COUNT; ++isa) {
    if (!posenc_isa_available((posenc_isa)isa)) continue;
    available[n_available++] = isa;
    if (posenc_set_isa((posenc_isa)isa) != POSENC_OK) return 2;
    run_all(0, &expected[isa]);
    if (expected[isa].isa != isa) fail("posenc_set_isa did not change the active ISA");
  }
  if (posenc_set_isa(initial) != POSENC_OK) return 2;

  /* Phase 2: one thread switches the ISA while the others call kernels. */
  pthread_t switch_thread;
  pthread_barrier_init(&barrier, NULL, (unsigned)n_threads);
  if (pthread_create(&switch_thread, NULL, switcher, NULL) != 0) return 2;
  for (int i = 0; i < n_threads - 1; ++i) {
    workers[i] = (worker){.index = i, .r = &res[i]};
    if (pthread_create(&workers[i].thread, NULL, kernel_loop, &workers[i]) != 0) return 2;
  }
  for (int i = 0; i < n_threads - 1; ++i) pthread_join(workers[i].thread, NULL);
  __atomic_store_n(&stop_switching, 1, __ATOMIC_RELEASE);
  pthread_join(switch_thread, NULL);
  pthread_barrier_destroy(&barrier);

  /* Phase 3: split invariance, every available ISA. */
  split_phase(workers);
  if (posenc_set_isa(initial) != POSENC_OK) return 2;

  const long failed = __atomic_load_n(&failures, __ATOMIC_RELAXED);
  printf("dispatch_race: %d threads, first-call ISA %s, %d ISAs cycled, %ld iterations: %s\n",
         n_threads, posenc_isa_name((posenc_isa)single->isa), n_available, iterations,
         failed ? "FAILED" : "ok");
  posenc_rope_plan_destroy(rope_plan);
  posenc_sinusoid_plan_destroy(sin_plan);
  free(workers);
  free(res);
  free(single);
  return failed ? 1 : 0;
}
