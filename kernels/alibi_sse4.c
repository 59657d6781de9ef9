/* alibi f32 for sse4: the shared SIMD source over the sse4 vector layer (first). */
#include "simd/vec_sse4.h"

#include "alibi_simd.h"
