// Slot-mapped destinations (posenc_rope_out_slots), on every ISA and storage pair:
//  - each written cell is bitwise posenc_rope_out's row of its token, for vLLM's paged
//    layout [blocks, block_size, H, D] and llama.cpp's [H, cells, D], int32 and int64
//    indices; negative indices write nothing; every other element of the cache keeps its
//    sentinel;
//  - token by token equals one call;
//  - every bad input (a cell out of range or given twice, NULL slots, overlapping views)
//    returns its status and writes nothing;
//  - posenc_rope_apply_slots: factor rows into the cells, bitwise posenc_rope_out_slots, and
//    its errors (the slots', the factors') writing nothing.
#include <posenc.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../kernels/half.h"
#include "test_support.h"

namespace posenc_test {
namespace {

constexpr uint32_t kSeed = 20261204;

size_t Size(posenc_dtype t) { return t == POSENC_DTYPE_F32 ? 4 : 2; }

// Raw storage of n elements of one type, filled with a byte pattern.
struct Store {
  posenc_dtype dtype;
  std::vector<uint8_t> bytes;
  Store(posenc_dtype t, size_t n) : dtype(t), bytes(n * Size(t) + 64, 0xA5) {}
  void* at(size_t i = 0) { return bytes.data() + i * Size(dtype); }
  bool operator==(const Store& o) const { return bytes == o.bytes; }
};

const posenc_dtype kPairs[][2] = {{POSENC_DTYPE_F32, POSENC_DTYPE_F32},
                                  {POSENC_DTYPE_BF16, POSENC_DTYPE_BF16},
                                  {POSENC_DTYPE_F16, POSENC_DTYPE_F16},
                                  {POSENC_DTYPE_F32, POSENC_DTYPE_BF16},
                                  {POSENC_DTYPE_F32, POSENC_DTYPE_F16}};

void FillRandom(Store& s, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  const posenc_elem e = s.dtype == POSENC_DTYPE_F32    ? POSENC_ELEM_F32
                        : s.dtype == POSENC_DTYPE_BF16 ? POSENC_ELEM_BF16
                                                       : POSENC_ELEM_F16;
  for (size_t i = 0; i < n; ++i) posenc_elem_store(s.at(), i, d(rng), e);
}

class RopeSlotsTest : public EveryIsaTest {};

// One case: L tokens of H heads of D elements ([L, H, D] source) into a cache of `cells`
// cells, llama.cpp's layout ([H, cells, D]) or vLLM's ([cells, H, D]).
struct Layout {
  bool head_major;
  size_t L, H, D, R, cells;
};

TEST_P(RopeSlotsTest, EachCellIsRopeOutsRowOfItsToken) {
  std::mt19937 rng(kSeed);
  const Layout layouts[] = {
      {false, 13, 2, 128, 128, 64}, {true, 9, 3, 80, 64, 40}, {false, 40, 1, 34, 34, 100}};
  for (const Layout& ly : layouts)
    for (const auto& pair : kPairs)
      for (int wide = 0; wide < 2; ++wide) {
        const PlanPtr plan = MakePlan(ly.R, 10000.0, 1.0);
        Store src(pair[0], ly.L * ly.H * ly.D);
        FillRandom(src, ly.L * ly.H * ly.D, rng);
        Store cache(pair[1], ly.cells * ly.H * ly.D), want(pair[1], ly.L * ly.H * ly.D);
        // Distinct cells, some tokens skipped.
        std::vector<int64_t> cells(ly.cells);
        std::iota(cells.begin(), cells.end(), 0);
        std::shuffle(cells.begin(), cells.end(), rng);
        std::vector<int64_t> idx64(ly.L);
        std::vector<int32_t> idx32(ly.L);
        for (size_t t = 0; t < ly.L; ++t) {
          idx64[t] = t % 5 == 3 ? -1 : cells[t];
          idx32[t] = static_cast<int32_t>(idx64[t]);
        }
        std::vector<int32_t> pos(ly.L);
        for (size_t t = 0; t < ly.L; ++t) pos[t] = static_cast<int32_t>(rng() % 50000);
        const posenc_rope_view sv = {src.at(), pair[0], ly.H, ly.H * ly.D, ly.D, 0};
        const posenc_rope_view wv = {want.at(), pair[1], ly.H, ly.H * ly.D, ly.D, 0};
        const posenc_rope_view cv =
            ly.head_major ? posenc_rope_view{cache.at(), pair[1], ly.H, ly.D, ly.cells * ly.D, 0}
                          : posenc_rope_view{cache.at(), pair[1], ly.H, ly.H * ly.D, ly.D, 0};
        ASSERT_EQ(posenc_rope_out(plan.get(), ly.D, 1, ly.L, pos.data(), 0, &sv, &wv, 0),
                  POSENC_OK);
        const Store before = cache;
        const posenc_slots slots = {
            wide ? static_cast<const void*>(idx64.data()) : static_cast<const void*>(idx32.data()),
            wide, ly.cells};
        ASSERT_EQ(posenc_rope_out_slots(plan.get(), ly.D, ly.L, pos.data(), 0, &sv, &cv, &slots, 0),
                  POSENC_OK);
        // Every element: the token's row where a token wrote the cell, else untouched.
        std::vector<int64_t> token_of(ly.cells, -1);
        for (size_t t = 0; t < ly.L; ++t)
          if (idx64[t] >= 0) token_of[idx64[t]] = static_cast<int64_t>(t);
        const size_t es = Size(pair[1]);
        for (size_t c = 0; c < ly.cells; ++c)
          for (size_t h = 0; h < ly.H; ++h) {
            const size_t at =
                ly.head_major ? h * ly.cells * ly.D + c * ly.D : (c * ly.H + h) * ly.D;
            const uint8_t* got = cache.bytes.data() + at * es;
            const uint8_t* expect = token_of[c] < 0
                                        ? before.bytes.data() + at * es
                                        : want.bytes.data() + (token_of[c] * ly.H + h) * ly.D * es;
            ASSERT_EQ(std::memcmp(got, expect, ly.D * es), 0)
                << "cell " << c << " head " << h << " token " << token_of[c]
                << (ly.head_major ? " [H, cells, D]" : " [cells, H, D]") << " int"
                << (wide ? 64 : 32);
          }
        ASSERT_TRUE(std::equal(cache.bytes.end() - 64, cache.bytes.end(), before.bytes.end() - 64))
            << "written past the cache";
        // Token by token: the same cache.
        Store split = before;
        const posenc_rope_view splitv = {split.at(),      cv.dtype,       cv.n_heads,
                                         cv.token_stride, cv.head_stride, 0};
        for (size_t t = 0; t < ly.L; ++t) {
          const posenc_rope_view st = {
              static_cast<uint8_t*>(src.at()) + t * ly.H * ly.D * Size(pair[0]),
              pair[0],
              ly.H,
              ly.H * ly.D,
              ly.D,
              0};
          const posenc_slots one = {&idx64[t], 1, ly.cells};
          ASSERT_EQ(
              posenc_rope_out_slots(plan.get(), ly.D, 1, nullptr, pos[t], &st, &splitv, &one, 0),
              POSENC_OK);
        }
        EXPECT_TRUE(split == cache);
      }
}

TEST_P(RopeSlotsTest, BadInputReturnsItsStatusAndWritesNothing) {
  std::mt19937 rng(kSeed + 1);
  const size_t H = 2, D = 64, cells = 50;
  const PlanPtr plan = MakePlan(D, 10000.0, 1.0);
  Store src(POSENC_DTYPE_F32, 40 * H * D), cache(POSENC_DTYPE_F16, cells * H * D);
  FillRandom(src, 40 * H * D, rng);
  const posenc_rope_view sv = {src.at(), POSENC_DTYPE_F32, H, H * D, D, 0};
  const posenc_rope_view cv = {cache.at(), POSENC_DTYPE_F16, H, H * D, D, 0};
  const posenc_rope_view tight = {cache.at(), POSENC_DTYPE_F16, H, D, D, 0};  // cells overlap
  const posenc_rope_view onto_src = {src.at(), POSENC_DTYPE_F32, H, H * D, D, 0};
  std::vector<int32_t> ok(40), dup_small(3), dup_large(40), out_of_range(2);
  for (int i = 0; i < 40; ++i) ok[i] = dup_large[i] = i;
  dup_large[39] = 7;
  dup_small = {4, -1, 4};
  out_of_range = {0, 50};
  std::vector<int64_t> big = {0, int64_t{1} << 40};
  // One token: the decode step's path of the check (api_rope_slots.c).
  std::vector<int32_t> out_of_range1 = {50};
  std::vector<int64_t> big1 = {int64_t{1} << 40};
  const posenc_slots s_ok = {ok.data(), 0, cells}, s_dup_small = {dup_small.data(), 0, cells},
                     s_dup_large = {dup_large.data(), 0, cells},
                     s_dup_sparse = {dup_large.data(), 0, 100000},  // the sorted check
      s_range = {out_of_range.data(), 0, cells}, s_big = {big.data(), 1, cells},
                     s_null = {nullptr, 0, cells}, s_kind = {ok.data(), 2, cells},
                     s_range1 = {out_of_range1.data(), 0, cells}, s_big1 = {big1.data(), 1, cells};
  struct Bad {
    const char* what;
    size_t n;
    const posenc_rope_view* dst;
    const posenc_slots* slots;
  };
  const Bad bad[] = {{"a cell twice (3 tokens)", 3, &cv, &s_dup_small},
                     {"a cell twice (40 tokens)", 40, &cv, &s_dup_large},
                     {"a cell twice (40 tokens of 100000 cells)", 40, &cv, &s_dup_sparse},
                     {"an index >= n_cells", 2, &cv, &s_range},
                     {"an int64 index >= n_cells", 2, &cv, &s_big},
                     {"NULL index", 2, &cv, &s_null},
                     {"is_int64 2", 2, &cv, &s_kind},
                     {"an index >= n_cells (1 token)", 1, &cv, &s_range1},
                     {"an int64 index >= n_cells (1 token)", 1, &cv, &s_big1},
                     {"NULL index (1 token)", 1, &cv, &s_null},
                     {"is_int64 2 (1 token)", 1, &cv, &s_kind},
                     {"NULL slots", 2, &cv, nullptr},
                     {"cells overlap", 2, &tight, &s_ok},
                     {"dst is src", 2, &onto_src, &s_ok}};
  for (const Bad& b : bad) {
    const Store c0 = cache, s0 = src;
    EXPECT_EQ(posenc_rope_out_slots(plan.get(), D, b.n, nullptr, 0, &sv, b.dst, b.slots, 0),
              POSENC_ERR_INVALID_ARGUMENT)
        << b.what;
    EXPECT_TRUE(cache == c0 && src == s0) << b.what << ": written";
  }
}

// posenc_rope_apply_slots: factor rows (from row first_row) into the cells, bitwise
// posenc_rope_out_slots with the plan, positions and flags the factors were computed from, for
// both layouts, every type pair, int32 and int64 indices; skipped tokens and cells no token
// names keep their bytes.
TEST_P(RopeSlotsTest, ApplySlotsIsRopeOutSlots) {
  std::mt19937 rng(kSeed + 2);
  const Layout layouts[] = {{false, 13, 2, 128, 128, 64}, {true, 9, 3, 80, 64, 40}};
  const unsigned flag_values[] = {0u, unsigned{POSENC_ROPE_GPTJ},
                                  unsigned{POSENC_ROPE_DETERMINISTIC | POSENC_ROPE_INVERSE}};
  for (const Layout& ly : layouts)
    for (const auto& pair : kPairs)
      for (int wide = 0; wide < 2; ++wide)
        for (unsigned flags : flag_values) {
          const std::string what = std::string(ly.head_major ? "[H, cells, D]" : "[cells, H, D]") +
                                   " pair " + std::to_string(pair[0]) + "->" +
                                   std::to_string(pair[1]) + " int" + (wide ? "64" : "32") +
                                   " flags " + std::to_string(flags);
          const PlanPtr plan = MakePlan(ly.R, 10000.0, 1.25);
          Store src(pair[0], ly.L * ly.H * ly.D);
          FillRandom(src, ly.L * ly.H * ly.D, rng);
          std::vector<int64_t> cells(ly.cells);
          std::iota(cells.begin(), cells.end(), 0);
          std::shuffle(cells.begin(), cells.end(), rng);
          std::vector<int64_t> idx64(ly.L);
          std::vector<int32_t> idx32(ly.L);
          for (size_t t = 0; t < ly.L; ++t) {
            idx64[t] = t % 4 == 1 ? -1 - static_cast<int64_t>(t) : cells[t];
            idx32[t] = static_cast<int32_t>(idx64[t]);
          }
          // Rows 0..2 are other positions: the call starts at first_row 3.
          const size_t first = 3;
          std::vector<int32_t> pos(first + ly.L);
          for (size_t t = 0; t < pos.size(); ++t) pos[t] = static_cast<int32_t>(rng() % 90000) - 7;
          const size_t bytes = posenc_rope_factors_bytes(ly.R, pos.size(), flags);
          std::vector<float> storage(bytes / sizeof(float));
          posenc_rope_factors f;
          ASSERT_EQ(posenc_rope_factors_compute(plan.get(), pos.size(), pos.data(), 0, flags,
                                                storage.data(), bytes, &f),
                    POSENC_OK)
              << what;
          Store want(pair[1], ly.cells * ly.H * ly.D);
          const Store before = want;
          Store got = want;
          const auto cache = [&](Store& c) {
            return ly.head_major ? posenc_rope_view{c.at(), pair[1], ly.H, ly.D, ly.cells * ly.D, 0}
                                 : posenc_rope_view{c.at(), pair[1], ly.H, ly.H * ly.D, ly.D, 0};
          };
          const posenc_rope_view sv = {src.at(), pair[0], ly.H, ly.H * ly.D, ly.D, 0};
          const posenc_rope_view wv = cache(want), gv = cache(got);
          const posenc_slots slots = {wide ? static_cast<const void*>(idx64.data())
                                           : static_cast<const void*>(idx32.data()),
                                      wide, ly.cells};
          ASSERT_EQ(posenc_rope_out_slots(plan.get(), ly.D, ly.L, pos.data() + first, 0, &sv, &wv,
                                          &slots, flags),
                    POSENC_OK)
              << what;
          const Store src_before = src;
          ASSERT_EQ(posenc_rope_apply_slots(&f, first, ly.D, ly.L, &sv, &gv, &slots, flags),
                    POSENC_OK)
              << what << ": " << posenc_last_error();
          EXPECT_TRUE(got == want) << what << ": differs from posenc_rope_out_slots";
          EXPECT_FALSE(got == before) << what << ": nothing written";
          EXPECT_TRUE(src == src_before) << what << ": wrote its source";
          // Skipped tokens and unnamed cells: untouched (the cells no token names).
          std::vector<bool> named(ly.cells, false);
          for (size_t t = 0; t < ly.L; ++t)
            if (idx64[t] >= 0) named[idx64[t]] = true;
          const size_t es = Size(pair[1]);
          for (size_t c = 0; c < ly.cells; ++c)
            for (size_t h = 0; h < ly.H && !named[c]; ++h) {
              const size_t at =
                  ly.head_major ? h * ly.cells * ly.D + c * ly.D : (c * ly.H + h) * ly.D;
              ASSERT_EQ(
                  std::memcmp(got.bytes.data() + at * es, before.bytes.data() + at * es, ly.D * es),
                  0)
                  << what << ": cell " << c << " written";
            }
        }
}

TEST_P(RopeSlotsTest, ApplySlotsBadInputReturnsItsStatusAndWritesNothing) {
  std::mt19937 rng(kSeed + 3);
  const size_t H = 2, D = 64, cells = 50, L = 40;
  const PlanPtr plan = MakePlan(D, 10000.0, 1.0);
  Store src(POSENC_DTYPE_F32, L * H * D), cache(POSENC_DTYPE_F16, cells * H * D);
  FillRandom(src, L * H * D, rng);
  std::vector<int32_t> pos(L);
  for (size_t t = 0; t < L; ++t) pos[t] = static_cast<int32_t>(t * 3);
  const size_t bytes = posenc_rope_factors_bytes(D, L, 0);
  // The factor rows, then room for a destination laid over them.
  std::vector<float> storage(bytes / sizeof(float) + cells * H * D);
  posenc_rope_factors f;
  ASSERT_EQ(posenc_rope_factors_compute(plan.get(), L, pos.data(), 0, 0, storage.data(), bytes, &f),
            POSENC_OK);
  const posenc_rope_view sv = {src.at(), POSENC_DTYPE_F32, H, H * D, D, 0};
  const posenc_rope_view cv = {cache.at(), POSENC_DTYPE_F16, H, H * D, D, 0};
  const posenc_rope_view tight = {cache.at(), POSENC_DTYPE_F16, H, D, D, 0};  // cells overlap
  const posenc_rope_view onto_src = {src.at(), POSENC_DTYPE_F32, H, H * D, D, 0};
  const posenc_rope_view onto_factors = {storage.data() + 8, POSENC_DTYPE_F32, H, H * D, D, 0};
  const posenc_rope_view bad_pair = {cache.at(), POSENC_DTYPE_F16, H, H * D, D, 0};
  const posenc_rope_view bf16_src = {src.at(), POSENC_DTYPE_BF16, H, H * D, D, 0};
  const posenc_rope_view other_heads = {cache.at(), POSENC_DTYPE_F16, H + 1, H * D, D, 0};
  std::vector<int32_t> ok(L), dup_small(3), dup_large(L), out_of_range(2);
  for (size_t i = 0; i < L; ++i) ok[i] = dup_large[i] = static_cast<int32_t>(i);
  dup_large[L - 1] = 7;
  dup_small = {4, -1, 4};
  out_of_range = {0, 50};
  std::vector<int64_t> big = {0, int64_t{1} << 40};
  const posenc_slots s_ok = {ok.data(), 0, cells}, s_dup_small = {dup_small.data(), 0, cells},
                     s_dup_large = {dup_large.data(), 0, cells},
                     s_dup_sparse = {dup_large.data(), 0, 100000},  // the sorted check
      s_range = {out_of_range.data(), 0, cells}, s_big = {big.data(), 1, cells},
                     s_null = {nullptr, 0, cells}, s_kind = {ok.data(), 2, cells};
  posenc_rope_factors gptj = f, bad_bits = f, bad_row = f, short_rows = f, odd_data = f;
  gptj.flags = POSENC_ROPE_GPTJ;
  bad_bits.flags = 1u << 7;
  bad_row.row_floats += 2;
  short_rows.n_rows = L - 1;
  odd_data.data = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(storage.data()) + 2);
  struct Bad {
    const char* what;
    const posenc_rope_factors* factors;
    size_t first_row, head_dim, n;
    const posenc_rope_view *src, *dst;
    const posenc_slots* slots;
    unsigned flags;
    const char* arg;
  };
  const Bad bad[] = {
      {"a cell twice (3 tokens)", &f, 0, D, 3, &sv, &cv, &s_dup_small, 0, "slots"},
      {"a cell twice (40 tokens)", &f, 0, D, L, &sv, &cv, &s_dup_large, 0, "slots"},
      {"a cell twice (40 tokens of 100000 cells)", &f, 0, D, L, &sv, &cv, &s_dup_sparse, 0,
       "slots"},
      {"an index >= n_cells", &f, 0, D, 2, &sv, &cv, &s_range, 0, "slots"},
      {"an int64 index >= n_cells", &f, 0, D, 2, &sv, &cv, &s_big, 0, "slots"},
      {"NULL index", &f, 0, D, 2, &sv, &cv, &s_null, 0, "slots"},
      {"is_int64 2", &f, 0, D, 2, &sv, &cv, &s_kind, 0, "slots"},
      {"NULL slots", &f, 0, D, 2, &sv, &cv, nullptr, 0, "slots"},
      {"cells overlap", &f, 0, D, 2, &sv, &tight, &s_ok, 0, "dst"},
      {"dst is src", &f, 0, D, 2, &sv, &onto_src, &s_ok, 0, "dst"},
      {"dst over the factor rows", &f, 0, D, 2, &sv, &onto_factors, &s_ok, 0, "dst"},
      {"bf16 to f16", &f, 0, D, 2, &bf16_src, &bad_pair, &s_ok, 0, "dst"},
      {"other head counts", &f, 0, D, 2, &sv, &other_heads, &s_ok, 0, "dst"},
      {"NULL src", &f, 0, D, 2, nullptr, &cv, &s_ok, 0, "src"},
      {"NULL dst", &f, 0, D, 2, &sv, nullptr, &s_ok, 0, "dst"},
      {"NULL factors", nullptr, 0, D, 2, &sv, &cv, &s_ok, 0, "factors"},
      {"unknown flags", &f, 0, D, 2, &sv, &cv, &s_ok, 1u << 9, "flags"},
      {"GPTJ other than the factors'", &f, 0, D, 2, &sv, &cv, &s_ok, POSENC_ROPE_GPTJ, "flags"},
      {"factors->flags GPTJ", &gptj, 0, D, 2, &sv, &cv, &s_ok, 0, "flags"},
      {"factors->flags unknown", &bad_bits, 0, D, 2, &sv, &cv, &s_ok, 0, "factors"},
      {"row_floats", &bad_row, 0, D, 2, &sv, &cv, &s_ok, 0, "factors"},
      {"rows beyond n_rows", &f, L - 1, D, 2, &sv, &cv, &s_ok, 0, "factors"},
      {"first_row overflows", &f, SIZE_MAX, D, 2, &sv, &cv, &s_ok, 0, "first_row"},
      {"factors too short", &short_rows, 0, D, L, &sv, &cv, &s_ok, 0, "factors"},
      {"misaligned factor rows", &odd_data, 0, D, 2, &sv, &cv, &s_ok, 0, "factors"},
      {"rotary_dim > head_dim", &f, 0, D - 2, 2, &sv, &cv, &s_ok, 0, "head_dim"}};
  for (const Bad& b : bad) {
    const Store c0 = cache, s0 = src;
    const std::vector<float> f0 = storage;
    PrimeLastError();
    EXPECT_EQ(posenc_rope_apply_slots(b.factors, b.first_row, b.head_dim, b.n, b.src, b.dst,
                                      b.slots, b.flags),
              POSENC_ERR_INVALID_ARGUMENT)
        << b.what;
    ExpectLastError("posenc_rope_apply_slots", b.arg, b.what);
    EXPECT_TRUE(cache == c0 && src == s0) << b.what << ": written";
    EXPECT_EQ(std::memcmp(storage.data(), f0.data(), storage.size() * sizeof(float)), 0)
        << b.what << ": wrote the factor storage";
  }
  // No-ops: no tokens, no heads, no cells, every index negative.
  std::vector<int32_t> negative(L, -1);
  const posenc_slots s_neg = {negative.data(), 0, cells}, s_none = {ok.data(), 0, 0};
  const posenc_rope_view no_heads_src = {src.at(), POSENC_DTYPE_F32, 0, H * D, D, 0};
  const posenc_rope_view no_heads_dst = {cache.at(), POSENC_DTYPE_F16, 0, H * D, D, 0};
  const Store c0 = cache;
  EXPECT_EQ(posenc_rope_apply_slots(&f, 0, D, 0, &sv, &cv, &s_ok, 0), POSENC_OK);
  EXPECT_EQ(posenc_rope_apply_slots(&f, 0, D, L, &sv, &cv, &s_neg, 0), POSENC_OK);
  EXPECT_EQ(posenc_rope_apply_slots(&f, 0, D, L, &no_heads_src, &no_heads_dst, &s_ok, 0),
            POSENC_OK);
  std::vector<int32_t> neg2 = {-1, -2};
  const posenc_slots s_neg_none = {neg2.data(), 0, 0};
  EXPECT_EQ(posenc_rope_apply_slots(&f, 0, D, 2, &sv, &cv, &s_neg_none, 0), POSENC_OK);
  (void)s_none;
  EXPECT_TRUE(cache == c0) << "a no-op wrote";
}

POSENC_INSTANTIATE_FOR_EVERY_ISA(RopeSlotsTest);

}  // namespace
}  // namespace posenc_test
