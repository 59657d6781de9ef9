// Internal to the bench: how each family of rows (rope_cases.cc, sinusoid_cases.cc, ...)
// describes its groups, so that one loop in bench_cases.cc registers and times them all.
#ifndef POSENC_BENCH_ROWS_H
#define POSENC_BENCH_ROWS_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "posenc.h"
#include "posenc_bench_cases.h"

namespace posenc_bench {

// One timed pass over a row's buffers. Returns the kernel's status (POSENC_OK for naive).
using Pass = std::function<posenc_status()>;
// Sets up a row (buffers, plan: untimed) and returns its pass, which owns what it uses.
using PassFactory = std::function<Pass()>;

// A pass that only returns `status`: for a setup step that failed.
Pass FailedPass(posenc_status status);

struct GroupRows {
  RowGroup group;
  int64_t bytes_per_pass;  // counted as posenc_bench_cases.h says
  int64_t items_per_pass;  // elements produced
  PassFactory posenc;      // called with the row's ISA already active
  PassFactory naive;       // empty where the group has no naive row (group.naive false)
};

// A factory that calls make(args...), the arguments kept by value.
template <class Make, class... Args>
PassFactory Factory(Make make, Args... args) {
  return [=] { return make(args...); };
}

// One group per shape, in order.
template <class Shape, size_t N>
std::vector<GroupRows> GroupPerShape(const Shape (&shapes)[N], GroupRows (*group)(const Shape&)) {
  std::vector<GroupRows> rows;
  for (const Shape& shape : shapes) rows.push_back(group(shape));
  return rows;
}

// The groups of each family, in registration order.
std::vector<GroupRows> RopeRows();
std::vector<GroupRows> RopeOutRows();
std::vector<GroupRows> RopeApplyRows();
std::vector<GroupRows> QknormRows();
std::vector<GroupRows> RopePagedRows();
std::vector<GroupRows> RopeRerotateRows();
std::vector<GroupRows> MropeRows();
std::vector<GroupRows> SinusoidRows();
std::vector<GroupRows> AlibiRows();
std::vector<GroupRows> AlibiSoftmaxRows();
std::vector<GroupRows> SoftmaxRows();
std::vector<GroupRows> LearnedRows();

// The decode rows (RowSet::kAll only) and the cold rows.
void RegisterDecodeLayersRows(RowSet set);
// paired_apart: without the limit rows of kPairedMinBytes and more (RegisterAll).
void RegisterLimitRows(RowSet set, bool paired_apart);

// The largest cache Google Benchmark found (0 if none).
size_t LastLevelCacheBytes();

// Passes of the limit row (kind, bytes) over buffers they share and own: the loop the row
// runs (the fastest of its candidates when first timed), the fastest of the other store kind
// (non-temporal or not) where there is one, then the next fastest: `count` in all at most,
// in the order of that ranking (their names into *labels); and the bytes and items one pass
// counts.
std::vector<Pass> LimitPasses(LimitKind kind, size_t bytes, size_t count,
                              std::vector<std::string>* labels);
int64_t LimitBytesPerPass(LimitKind kind, size_t bytes);
int64_t LimitItemsPerPass(LimitKind kind, size_t bytes);

// Calls the hook of SetRowEnterHook(), if any.
void NotifyRowEnter(const std::string& row_name, int64_t max_iterations);

// The fraction of an [n_q, n_k] score block a causal mask leaves visible (RowGroup::visible):
// query i at position q_offset + i sees keys [0, q_offset + i], the last `window` of them at
// most (0: no window).
inline double CausalVisibleFraction(size_t n_q, size_t n_k, size_t q_offset, size_t window) {
  const size_t span = window && window < n_k ? window : n_k;
  size_t visible = 0;
  for (size_t i = 0; i < n_q; ++i) visible += std::min(span, q_offset + i + 1);
  return static_cast<double>(visible) / static_cast<double>(n_q * n_k);
}

// n bytes of floats, as the int64_t Google Benchmark counts.
inline int64_t FloatBytes(size_t n) { return static_cast<int64_t>(n * sizeof(float)); }

}  // namespace posenc_bench

#endif  // POSENC_BENCH_ROWS_H
