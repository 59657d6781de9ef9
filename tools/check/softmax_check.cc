#include "softmax_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "check_common.h"
#include "posenc.h"

namespace posenc_report {
namespace {

constexpr int kCases = 400;   // of which kLongRows have 4097 keys or more
constexpr int kLongRows = 8;  // (16-bit y: more than one 4096-column block)
constexpr int32_t kTop = INT32_MAX;

// ---- values stored as f32, bf16 or f16 ------------------------------------------------

float Stored(posenc_dtype d, float f) {
  return d == POSENC_DTYPE_BF16  ? FromBf16(ToBf16(f))
         : d == POSENC_DTYPE_F16 ? FromF16(ToF16(f))
                                 : f;
}

// A buffer of one dtype: f32 values in f, 16-bit ones in h.
struct Buffer {
  posenc_dtype dtype = POSENC_DTYPE_F32;
  std::vector<float> f;
  std::vector<uint16_t> h;

  static Buffer Of(posenc_dtype d, const std::vector<float>& values) {
    Buffer b;
    b.dtype = d;
    if (d == POSENC_DTYPE_F32) {
      b.f = values;
    } else {
      for (float v : values) b.h.push_back(d == POSENC_DTYPE_BF16 ? ToBf16(v) : ToF16(v));
    }
    return b;
  }
  void* data() { return dtype == POSENC_DTYPE_F32 ? static_cast<void*>(f.data()) : h.data(); }
  const void* data() const { return const_cast<Buffer*>(this)->data(); }
  // The bits of element i (f32: 32 bits; 16-bit: 16 bits).
  uint32_t BitsAt(size_t i) const { return dtype == POSENC_DTYPE_F32 ? Bits(f[i]) : h[i]; }
  // The stored bits of the float v.
  uint32_t BitsOf(float v) const {
    return dtype == POSENC_DTYPE_F32 ? Bits(v) : dtype == POSENC_DTYPE_BF16 ? ToBf16(v) : ToF16(v);
  }
};

posenc_dtype RandomDtype(std::mt19937_64& rng) {
  static const posenc_dtype kDtypes[] = {POSENC_DTYPE_F32, POSENC_DTYPE_F32, POSENC_DTYPE_BF16,
                                         POSENC_DTYPE_F16};
  return kDtypes[rng() % 4];
}

// ---- a random call ----------------------------------------------------------------------

// [H, n_q, n_k] or [n_q, H, n_k] with 0-3 elements of padding after rows and heads; the
// row stride passed is 0 (n_k) when the rows are dense.
struct Layout {
  size_t head_stride = 0, row_stride = 0, extent = 0;
  size_t Index(size_t h, size_t i, size_t j) const { return h * head_stride + i * row_stride + j; }
};

Layout RandomLayout(std::mt19937_64& rng, size_t heads, size_t n_q, size_t n_k) {
  Layout l;
  const size_t pad = (rng() % 2) ? rng() % 4 : 0, pad2 = (rng() % 2) ? rng() % 4 : 0;
  if (rng() % 2) {
    l.row_stride = n_k + pad;
    l.head_stride = n_q * l.row_stride + pad2;
  } else {
    l.head_stride = n_k + pad;
    l.row_stride = heads * l.head_stride + pad2;
  }
  l.extent = (heads - 1) * l.head_stride + (n_q - 1) * l.row_stride + n_k;
  return l;
}

struct Case {
  size_t heads = 0, n_q = 0, n_k = 0;
  posenc_softmax_params p = POSENC_SOFTMAX_PARAMS_INIT;  // the arrays set by Params()
  std::vector<float> slopes, sinks, mask;                // empty: none; mask: widened values
  std::vector<uint16_t> mask16;
  std::vector<int32_t> kpos, qpos;
  Layout x, y;  // y == x in place
  bool in_place = false;
  posenc_dtype xd = POSENC_DTYPE_F32, yd = POSENC_DTYPE_F32;
  std::vector<float> in;         // x, representable in xd
  std::vector<float> sentinel;   // y's initial values (out of place)
  std::vector<char> kind;        // per y element: 0 outside the rows, 1 y*, 2 exactly +0
  std::vector<long double> ref;  // y*
  double rel = 0;                // the relative tolerance

  static Case Random(std::mt19937_64& rng, bool long_row);
  posenc_softmax_params Params() const;
  void RandomMask(std::mt19937_64& rng);
  void RandomPositions(std::mt19937_64& rng);
  void Reference();
  bool Hidden(size_t h, size_t i, size_t j, float* mask_value) const;
  long double T(size_t h, size_t i, size_t j, float m) const;
  bool Run(posenc_isa isa, posenc_dtype xd_run, posenc_dtype yd_run, Buffer& x_buf,
           Buffer& y_buf) const;
};

void Case::RandomMask(std::mt19937_64& rng) {
  const size_t row = (rng() % 2) ? n_k + rng() % 4 : n_k;
  p.mask_row_stride = row == n_k && rng() % 2 ? 0 : row;
  p.mask_head_stride = (rng() % 2) ? n_q * row + rng() % 4 : 0;  // 0: shared by the heads
  p.mask_dtype = (rng() % 2) ? POSENC_DTYPE_F32 : POSENC_DTYPE_F16;
  const size_t extent = (heads - 1) * p.mask_head_stride + (n_q - 1) * row + n_k;
  const float amplitude = (p.flags & POSENC_SOFTMAX_SOFTCAP) ? 2.0f : 8.0f;
  const int hidden_percent = static_cast<int>(rng() % 4) * 20;
  mask = RandomData(rng, extent);
  for (float& m : mask) {
    m = static_cast<int>(rng() % 100) < hidden_percent ? -INFINITY : m * amplitude;
    m = Stored(p.mask_dtype, m);
    if (p.mask_dtype == POSENC_DTYPE_F16) mask16.push_back(ToF16(m));
  }
}

// Key positions (none: j; a shuffled cache; a run near 2^31), query positions (none:
// q_offset + i, from 0, around the keys, or near 2^31; or an array).
void Case::RandomPositions(std::mt19937_64& rng) {
  const int32_t far = kTop - static_cast<int32_t>(n_k) - static_cast<int32_t>(rng() % 1000);
  const auto at_most = [](int64_t v, int64_t top) {
    return static_cast<int32_t>(std::min(v, top));
  };
  switch (rng() % 3) {
    case 1:
      for (size_t j = 0; j < n_k; ++j) kpos.push_back(static_cast<int32_t>(rng() % (2 * n_k)));
      break;
    case 2:
      for (size_t j = 0; j < n_k; ++j) kpos.push_back(far + static_cast<int32_t>(j));
      break;
  }
  const int64_t base = kpos.empty() ? 0 : kpos[0];
  if (rng() % 3 == 0) {
    for (size_t i = 0; i < n_q; ++i)
      qpos.push_back((rng() % 4 == 0) ? static_cast<int32_t>(rng() % kTop)
                                      : at_most(base + int64_t(rng() % (2 * n_k)), kTop));
  } else {  // q_offset + n_q - 1 <= 2^31 - 1
    const int64_t top = kTop - static_cast<int64_t>(n_q - 1);
    const int start = static_cast<int>(rng() % 3);
    p.q_offset = start == 0   ? at_most(base, top)
                 : start == 1 ? at_most(base + int64_t(rng() % (2 * n_k)), top)
                              : at_most(top - int64_t(rng() % 1000), top);
  }
}

posenc_softmax_params Case::Params() const {
  posenc_softmax_params q = p;
  q.slopes = slopes.empty() ? nullptr : slopes.data();
  q.sinks = sinks.empty() ? nullptr : sinks.data();
  q.mask = mask.empty()                       ? nullptr
           : p.mask_dtype == POSENC_DTYPE_F16 ? static_cast<const void*>(mask16.data())
                                              : static_cast<const void*>(mask.data());
  q.kpos = kpos.empty() ? nullptr : kpos.data();
  q.qpos = qpos.empty() ? nullptr : qpos.data();
  return q;
}

Case Case::Random(std::mt19937_64& rng, bool long_row) {
  Case c;
  c.heads = long_row ? 1 : 1 + rng() % 4;
  c.n_q = long_row ? 1 + rng() % 2 : 1 + rng() % 8;
  c.n_k = long_row ? 4097 + rng() % 2000 : 1 + rng() % 300;
  posenc_softmax_params& p = c.p;
  p.scale = (rng() % 2) ? 1.0f : std::uniform_real_distribution<float>(0.05f, 2.0f)(rng);
  if (rng() % 2) p.flags |= POSENC_SOFTMAX_CAUSAL;
  if (rng() % 4 == 0) {
    p.flags |= POSENC_SOFTMAX_WINDOW;
    p.window = 1 + static_cast<int32_t>(rng() % (c.n_k + 2));
  }
  if (rng() % 4 == 0) {
    p.flags |= POSENC_SOFTMAX_SOFTCAP;
    p.softcap = std::uniform_real_distribution<float>(1.0f, 50.0f)(rng);
  }
  if (rng() % 3) c.RandomMask(rng);
  // ALiBi (not with soft-capping: the bound's c 2^-20 covers t of magnitude about c).
  if (!(p.flags & POSENC_SOFTMAX_SOFTCAP) && rng() % 2) {
    c.slopes = RandomData(rng, c.heads);
    if (rng() % 2 && posenc_alibi_slopes(c.heads, 8.0, c.slopes.data()) != POSENC_OK)
      c.slopes.assign(c.heads, NAN);  // fails every call
    const int form = static_cast<int>(rng() % 3);
    if (form == 1) p.flags |= POSENC_SOFTMAX_ALIBI_SYMMETRIC;
    if (form == 2 && !c.mask.empty()) p.flags |= POSENC_SOFTMAX_MASK_SLOPE;
  }
  if (rng() % 3 == 0) {
    c.sinks = RandomData(rng, c.heads);
    for (float& s : c.sinks) s *= 4;
  }
  c.RandomPositions(rng);
  c.xd = RandomDtype(rng);
  c.yd = RandomDtype(rng);
  c.in_place = c.xd == c.yd && rng() % 2;
  c.x = RandomLayout(rng, c.heads, c.n_q, c.n_k);
  c.y = c.in_place ? c.x : RandomLayout(rng, c.heads, c.n_q, c.n_k);
  static const float kAmplitudes[] = {1.0f, 8.0f, 40.0f};
  const float amplitude = kAmplitudes[rng() % 3];
  const bool neg_inf = rng() % 8 == 0;
  c.in = RandomData(rng, c.x.extent);
  for (float& v : c.in) v = Stored(c.xd, neg_inf && rng() % 4 == 0 ? -INFINITY : v * amplitude);
  c.sentinel = RandomData(rng, c.y.extent);
  c.Reference();
  return c;
}

// ---- the reference ----------------------------------------------------------------------

// Whether key j of row i of head h is hidden; the row's mask value in *mask_value (0: none).
bool Case::Hidden(size_t h, size_t i, size_t j, float* mask_value) const {
  *mask_value = 0.0f;
  if (!mask.empty()) {
    const size_t row = p.mask_row_stride ? p.mask_row_stride : n_k;
    *mask_value = mask[h * p.mask_head_stride + i * row + j];
    if (*mask_value == -INFINITY) return true;
  }
  const int64_t kp = kpos.empty() ? static_cast<int64_t>(j) : kpos[j];
  const int64_t qp = qpos.empty() ? p.q_offset + static_cast<int64_t>(i) : qpos[i];
  if ((p.flags & POSENC_SOFTMAX_CAUSAL) && kp > qp) return true;
  return (p.flags & POSENC_SOFTMAX_WINDOW) && qp - kp >= p.window;
}

// t as posenc.h defines it: float operations in the order written (the library's checks are
// compiled without contraction); with soft-capping, c tanh(u / c) + mask exactly.
long double Case::T(size_t h, size_t i, size_t j, float m) const {
  const float u = p.scale * in[x.Index(h, i, j)];
  if (p.flags & POSENC_SOFTMAX_SOFTCAP) {
    const long double c = p.softcap;
    return c * std::tanh(static_cast<long double>(u) / c) + m;
  }
  const float slope = slopes.empty() ? 0.0f : slopes[h];
  float t = u;
  if (!mask.empty()) t = (p.flags & POSENC_SOFTMAX_MASK_SLOPE) ? t + slope * m : t + m;
  if (!slopes.empty() && !(p.flags & POSENC_SOFTMAX_MASK_SLOPE)) {
    const int32_t kp = kpos.empty() ? static_cast<int32_t>(j) : kpos[j];
    const int32_t qp = qpos.empty() ? p.q_offset + static_cast<int32_t>(i) : qpos[i];
    const int32_t d = kp - qp;  // both >= 0: no overflow
    if (p.flags & POSENC_SOFTMAX_ALIBI_SYMMETRIC)
      t = t - slope * static_cast<float>(d < 0 ? -d : d);
    else
      t = t + slope * static_cast<float>(d);
  }
  return t;
}

void Case::Reference() {
  kind.assign(y.extent, 0);
  ref.assign(y.extent, 0.0L);
  rel = POSENC_SOFTMAX_REL_TOLERANCE +
        ((p.flags & POSENC_SOFTMAX_SOFTCAP) ? p.softcap * 0x1p-20 : 0.0);
  std::vector<long double> t(n_k);
  std::vector<char> visible(n_k);
  for (size_t h = 0; h < heads; ++h)
    for (size_t i = 0; i < n_q; ++i) {
      long double mx = -INFINITY;
      for (size_t j = 0; j < n_k; ++j) {
        float m;
        visible[j] = !Hidden(h, i, j, &m);
        if (visible[j]) mx = std::max(mx, t[j] = T(h, i, j, m));
      }
      const bool zeros = mx == -INFINITY;  // nothing visible, or only -inf: all +0
      if (!sinks.empty()) mx = std::max<long double>(mx, sinks[h]);
      long double sum = sinks.empty() ? 0.0L : std::exp(sinks[h] - mx);
      for (size_t j = 0; j < n_k; ++j)
        if (visible[j]) sum += std::exp(t[j] - mx);
      for (size_t j = 0; j < n_k; ++j) {
        const size_t k = y.Index(h, i, j);
        const bool zero = zeros || !visible[j] || t[j] == -INFINITY;
        kind[k] = zero ? 2 : 1;
        if (!zero) ref[k] = std::exp(t[j] - mx) / sum;
      }
    }
}

// One call on the ISA with x stored as xd_run and y as yd_run (y starts as the sentinel, or
// as x in place); the buffers are left for the caller to compare.
bool Case::Run(posenc_isa isa, posenc_dtype xd_run, posenc_dtype yd_run, Buffer& x_buf,
               Buffer& y_buf) const {
  x_buf = Buffer::Of(xd_run, in);
  if (!in_place) y_buf = Buffer::Of(yd_run, sentinel);
  Buffer& out = in_place ? x_buf : y_buf;
  const posenc_scores_view xv = {x_buf.data(), xd_run, x.head_stride, x.row_stride, 0};
  const posenc_scores_view yv = {out.data(), yd_run, y.head_stride, y.row_stride, 0};
  const posenc_softmax_params params = Params();
  const bool ok = posenc_set_isa(isa) == POSENC_OK &&
                  posenc_softmax(&params, heads, n_q, n_k, &xv, in_place ? &xv : &yv) == POSENC_OK;
  if (in_place) y_buf = x_buf;
  return ok;
}

// ---- the table ----------------------------------------------------------------------------

struct Errors {
  double worst = 0;              // |y - y*| / (rel * y* + abs)
  size_t storage = 0;            // 16-bit calls: elements not bit-identical to the f32 call's
  size_t untouched_changed = 0;  // y outside the rows, or x out of place
  size_t failed_calls = 0;
};

// Elements outside y's rows (and, out of place, any element of x) that changed.
size_t Untouched(const Case& c, const Buffer& x_buf, const Buffer& y_buf) {
  size_t changed = 0;
  for (size_t k = 0; k < c.y.extent; ++k)
    if (!c.kind[k])
      changed += y_buf.BitsAt(k) != y_buf.BitsOf(c.in_place ? c.in[k] : c.sentinel[k]);
  for (size_t k = 0; !c.in_place && k < c.x.extent; ++k)
    changed += x_buf.BitsAt(k) != x_buf.BitsOf(c.in[k]);
  return changed;
}

void CheckCase(const Case& c, posenc_isa isa, Errors& e) {
  Buffer x32, y32, x16, y16;
  if (!c.Run(isa, POSENC_DTYPE_F32, POSENC_DTYPE_F32, x32, y32)) {
    ++e.failed_calls;
    return;
  }
  e.untouched_changed += Untouched(c, x32, y32);
  for (size_t k = 0; k < c.y.extent; ++k) {
    if (c.kind[k] == 2 && Bits(y32.f[k]) != 0) KeepWorst(e.worst, INFINITY);  // must be +0
    if (c.kind[k] != 1) continue;
    const long double want = c.ref[k];
    KeepWorst(e.worst, static_cast<double>(std::fabs(y32.f[k] - want) /
                                           (c.rel * want + POSENC_SOFTMAX_ABS_TOLERANCE)));
  }
  if (c.xd == POSENC_DTYPE_F32 && c.yd == POSENC_DTYPE_F32) return;
  if (!c.Run(isa, c.xd, c.yd, x16, y16)) {
    ++e.failed_calls;
    return;
  }
  e.untouched_changed += Untouched(c, x16, y16);
  for (size_t k = 0; k < c.y.extent; ++k)
    if (c.kind[k]) e.storage += y16.BitsAt(k) != y16.BitsOf(y32.f[k]);
}

bool Passes(const Errors& e) {
  return e.worst <= 1.0 && e.storage + e.untouched_changed + e.failed_calls == 0;
}

void PrintRow(std::ostream& out, posenc_isa isa, const Errors& e) {
  char line[200];
  std::snprintf(line, sizeof line, "  %-8s %11.3g %9.3g %10zu %10zu %6zu   %s\n",
                posenc_isa_name(isa), e.worst, 1.0, e.storage, e.untouched_changed, e.failed_calls,
                Passes(e) ? "PASS" : "FAIL");
  out << line;
}

}  // namespace

bool RunSoftmaxCheck(uint64_t seed, std::ostream& out) {
  out << "\n  Softmax: " << kCases << " random posenc_softmax calls (" << kLongRows
      << " of 4097+ keys): f32/f16 masks, shared or per\n"
         "    head, with -inf cells; key and query positions (shuffled, up to 2^31) or offsets;\n"
         "    causal, window, soft-capping, sinks, ALiBi (signed, symmetric, slope x mask);\n"
         "    x and y f32/bf16/f16, in place or not, padded strides\n"
         "  softmax err: f32 calls, worst |y - y*| / (rel_tol * y* + abs_tol) against the exact\n"
         "    softmax of posenc.h's float t (long double; soft-capping: of c tanh(u/c) + mask,\n"
         "    rel_tol + c 2^-20); hidden keys and rows with nothing visible exactly +0\n"
         "  16-bit: elements of the calls with a bf16/f16 x or y not bit-identical to the same\n"
         "    ISA's f32 call (rounded to y's type)\n";
  out << "  isa      softmax err     bound     16-bit  untouched  calls   result\n";
  std::vector<Errors> errors(POSENC_ISA_COUNT);
  std::mt19937_64 rng(seed + 2);  // not the other checks' cases again
  for (int n = 0; n < kCases; ++n) {
    const Case c = Case::Random(rng, n >= kCases - kLongRows);
    for (posenc_isa isa : AvailableIsas()) CheckCase(c, isa, errors[isa]);
  }
  const bool all_pass = PrintIsaRows([&](posenc_isa isa) {
    PrintRow(out, isa, errors[isa]);
    return Passes(errors[isa]);
  });
  out << "  (untouched: elements outside y's rows, or of x out of place, that changed; calls:\n"
         "    failed calls)\n";
  return all_pass;
}

}  // namespace posenc_report
