/* The plain RoPE loop an integrator would write (see rope_naive.h): no intrinsics, no
 * restrict, left to the compiler's -O3 -march=native. */
#include "rope_naive.h"

#include <math.h>
#include <string.h>

#include "naive_half.h"

void naive_rope_table(size_t n_tokens, const int32_t *positions, size_t rotary_dim, double base,
                      float *cos_tab, float *sin_tab) {
  const size_t half = rotary_dim / 2;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t i = 0; i < half; ++i) {
      const double angle = positions[t] * pow(base, -(double)(2 * i) / (double)rotary_dim);
      cos_tab[t * half + i] = (float)cos(angle);
      sin_tab[t * half + i] = (float)sin(angle);
    }
  }
}

void naive_rerotate_table(size_t n_tokens, const int32_t *from_positions, const double *from_freqs,
                          const int32_t *to_positions, const double *to_freqs, size_t rotary_dim,
                          double scale, float *cos_tab, float *sin_tab) {
  const size_t half = rotary_dim / 2;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t i = 0; i < half; ++i) {
      const double to = to_positions ? to_positions[t] * to_freqs[i] : 0.0;
      const double from = from_positions ? from_positions[t] * from_freqs[i] : 0.0;
      cos_tab[t * half + i] = (float)(scale * cos(to - from));
      sin_tab[t * half + i] = (float)(scale * sin(to - from));
    }
  }
}

void naive_mrope_table(size_t n_tokens, const int32_t *positions, const size_t sections[3],
                       size_t rotary_dim, const double *freqs, double scale, float *cos_tab,
                       float *sin_tab) {
  const size_t half = rotary_dim / 2;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t i = 0; i < half; ++i) {
      const size_t row = i < sections[0] ? 0 : i < sections[0] + sections[1] ? 1 : 2;
      const double angle = positions[row * n_tokens + t] * freqs[i];
      cos_tab[t * half + i] = (float)(scale * cos(angle));
      sin_tab[t * half + i] = (float)(scale * sin(angle));
    }
  }
}

void naive_rope_neox(float *x, size_t n_tokens, size_t n_heads, size_t head_dim, size_t rotary_dim,
                     const float *cos_tab, const float *sin_tab) {
  const size_t half = rotary_dim / 2;
  for (size_t t = 0; t < n_tokens; ++t) {
    const float *c = cos_tab + t * half, *s = sin_tab + t * half;
    for (size_t h = 0; h < n_heads; ++h) {
      float *v = x + (t * n_heads + h) * head_dim;
      for (size_t i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = x0 * c[i] - x1 * s[i];
        v[i + half] = x1 * c[i] + x0 * s[i];
      }
    }
  }
}

void naive_rope_gptj(float *x, size_t n_tokens, size_t n_heads, size_t head_dim, size_t rotary_dim,
                     const float *cos_tab, const float *sin_tab) {
  const size_t half = rotary_dim / 2;
  for (size_t t = 0; t < n_tokens; ++t) {
    const float *c = cos_tab + t * half, *s = sin_tab + t * half;
    for (size_t h = 0; h < n_heads; ++h) {
      float *v = x + (t * n_heads + h) * head_dim;
      for (size_t i = 0; i < half; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * c[i] - x1 * s[i];
        v[2 * i + 1] = x1 * c[i] + x0 * s[i];
      }
    }
  }
}

static void naive_rope_heads_inline(float *x, size_t n_heads, size_t head_dim, int32_t pos) {
  const size_t half = head_dim / 2;
  for (size_t h = 0; h < n_heads; ++h) {
    float *v = x + h * head_dim;
    for (size_t i = 0; i < half; ++i) {
      const float freq = 1.0f / powf(10000.0f, (float)(2 * i) / (float)head_dim);
      const float val = (float)pos * freq;
      const float fcr = cosf(val);
      const float fci = sinf(val);
      const float v0 = v[i], v1 = v[i + half];
      v[i] = v0 * fcr - v1 * fci;
      v[i + half] = v0 * fci + v1 * fcr;
    }
  }
}

void naive_rope_decode_inline(float *q, size_t q_heads, float *k, size_t k_heads, size_t head_dim,
                              int32_t pos) {
  naive_rope_heads_inline(q, q_heads, head_dim, pos);
  naive_rope_heads_inline(k, k_heads, head_dim, pos);
}

/* bf16_to_float, float_to_bf16, f16_to_float, float_to_f16: naive_half.h. */

#define NAIVE_ROPE_NEOX16(name, load, store)                                                  \
  void name(uint16_t *x, size_t n_tokens, size_t n_heads, size_t head_dim, size_t rotary_dim, \
            const float *cos_tab, const float *sin_tab) {                                     \
    const size_t half = rotary_dim / 2;                                                       \
    for (size_t t = 0; t < n_tokens; ++t) {                                                   \
      const float *c = cos_tab + t * half, *s = sin_tab + t * half;                           \
      for (size_t h = 0; h < n_heads; ++h) {                                                  \
        uint16_t *v = x + (t * n_heads + h) * head_dim;                                       \
        for (size_t i = 0; i < half; ++i) {                                                   \
          const float x0 = load(v[i]), x1 = load(v[i + half]);                                \
          v[i] = store(x0 * c[i] - x1 * s[i]);                                                \
          v[i + half] = store(x1 * c[i] + x0 * s[i]);                                         \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }

NAIVE_ROPE_NEOX16(naive_rope_neox_bf16, bf16_to_float, float_to_bf16)
NAIVE_ROPE_NEOX16(naive_rope_neox_f16, f16_to_float, float_to_f16)
