/* learned f32 for sse4: the variant is dropped, the scalar reference runs instead. The
 * reference's loop is one float addition per element, which the compiler vectorises with
 * SSE2 already; a hand-written SSE4 loop measured no faster (bench learned_add_f32,
 * tokens:16 and tokens:512: 1.02x and 0.97x scalar). The wider tiers stay: on the
 * cache-resident rows (tokens:16) avx2 ran 1.81x and avx512 2.05x the scalar speed. */
#include "variants.h"

void posenc_learned_add_f32_sse4(const learned_f32_args *args) {
  posenc_learned_add_f32_scalar(args);
}
