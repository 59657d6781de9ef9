#include "bench_report.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "posenc.h"
#include "posenc_bench_cases.h"
#include "report_progress.h"
#include "report_rates.h"

namespace posenc_report {
namespace {

// The most rounds a paired group runs (its time, BenchOptions::paired_seconds, ends it first
// but for the smallest passes).
constexpr int kPairedMaxRounds = 400;
// The sweeps over the paired groups a run makes (each group's time split among them).
constexpr int kPairedSweeps = 3;

struct RowResult {
  double bytes_per_second = 0;
  std::string label;
  double rope_ns_per_layer = -1;  // the decode and cold rows' counter; -1 elsewhere
  double fma_per_second = -1;     // the compute-limit rows' counter (vector FMAs); -1 elsewhere
  double items_per_second = 0;    // elements produced
  // Measured in paired rounds (posenc_bench::MeasurePaired): the rounds, and the quartiles of
  // the per-round ratio of the row's rate to its limit row's (the row's rate is the limit's
  // median rate times the median of those ratios). 0 rounds: measured by Google Benchmark.
  int paired_rounds = 0;
  double of_limit_q25 = 0, of_limit_q75 = 0;
};
using Results = std::map<std::string, RowResult>;
// Rows that did not run (their setup or first call failed): name -> why.
using Failures = std::map<std::string, std::string>;

// Keeps, per row, the median when there are repetitions, else the single run. Verbose:
// prints Google Benchmark's usual lines to stderr; otherwise only the rows that failed.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  CollectingReporter(Results& results, Failures& failures, bool verbose)
      : ConsoleReporter(OO_None), results_(results), failures_(failures), verbose_(verbose) {
    SetOutputStream(&std::cerr);
    SetErrorStream(&std::cerr);
  }
  bool ReportContext(const Context& context) override {
    return verbose_ ? ConsoleReporter::ReportContext(context) : true;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    if (verbose_) ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool wanted = run.run_type == Run::RT_Iteration || run.aggregate_name == "median";
      const std::string name = WithoutRepeats(run.run_name.str());
      if (run.error_occurred && run.run_type == Run::RT_Iteration) {
        failures_[name] = run.error_message;
        if (!verbose_)
          std::cerr << "\nposenc-report: " << run.benchmark_name() << ": " << run.error_message
                    << "\n";
      }
      if (run.error_occurred || !wanted) continue;
      const auto bytes = run.counters.find("bytes_per_second");
      const auto fma = run.counters.find("fma");
      const bool mix = name.rfind("limit_mix/", 0) == 0;  // items only
      if (bytes == run.counters.end() && fma == run.counters.end() && !mix) continue;
      const auto rope_ns = run.counters.find("rope_ns_per_layer");
      results_[name] = {bytes == run.counters.end() ? 0 : bytes->second.value, run.report_label,
                        rope_ns == run.counters.end() ? -1 : rope_ns->second.value,
                        fma == run.counters.end() ? -1 : fma->second.value};
      const auto items = run.counters.find("items_per_second");
      if (items != run.counters.end()) results_[name].items_per_second = items->second.value;
    }
  }

 private:
  Results& results_;
  Failures& failures_;
  bool verbose_;
};

// Every row RegisterAll(set, true) registers (the paired rows and the limit rows of their
// sizes left out), in its order; `baseline`: a scalar or naive row of a group
// (posenc_bench::IsBaselineRow), which takes BenchOptions::baseline_repetitions.
struct RegisteredRow {
  std::string name;
  bool baseline = false;
};
std::vector<RegisteredRow> RegisteredRows(posenc_bench::RowSet set) {
  std::vector<RegisteredRow> rows;
  for (const posenc_bench::RowGroup& group : posenc_bench::RowGroups())
    if (posenc_bench::InRowSet(group, set))
      for (const std::string& variant : posenc_bench::GroupVariants(group))
        if (!posenc_bench::IsPairedRow(group, variant))
          rows.push_back({posenc_bench::RowName(group.kernel, variant, group.shape),
                          posenc_bench::IsBaselineRow(variant)});
  std::vector<std::string> names;
  if (set == posenc_bench::RowSet::kAll)
    for (const std::string& name : posenc_bench::DecodeLayersRunNames()) names.push_back(name);
  for (const std::string& name : posenc_bench::ColdLayerRunNames()) names.push_back(name);
  for (const posenc_bench::LimitRow& limit : posenc_bench::LimitRows(set))
    if (limit.bytes < posenc_bench::kPairedMinBytes)
      names.push_back(posenc_bench::LimitRowName(limit.kind, limit.bytes));
  for (const std::string& name : posenc_bench::LimitFmaRowNames()) names.push_back(name);
  for (const std::string& name : posenc_bench::LimitMixRowNames()) names.push_back(name);
  for (std::string& name : names) rows.push_back({std::move(name)});
  return rows;
}

posenc_bench::RowSet RowSetOf(const BenchOptions& o) {
  return o.full ? posenc_bench::RowSet::kAll : posenc_bench::RowSet::kCore;
}

// --filter as Google Benchmark applies it: a POSIX extended regex searched in the row name,
// a leading '-' negating it; every row if empty or "all". Matches nothing if it does not
// compile here (Google Benchmark then says why).
class RowFilter {
 public:
  explicit RowFilter(const std::string& filter) {
    std::string spec = filter.empty() || filter == "all" ? "." : filter;
    negative_ = spec[0] == '-';
    if (negative_) spec.erase(0, 1);
    try {
      re_ = std::regex(spec, std::regex::extended);
      valid_ = true;
    } catch (const std::regex_error&) {
    }
  }
  bool Matches(const std::string& name) const {
    return valid_ && std::regex_search(name, re_) != negative_;
  }

 private:
  std::regex re_;
  bool negative_ = false, valid_ = false;
};

// The runs Google Benchmark will make: rows matching the filter x their repetitions; 0 if
// the filter does not compile here.
size_t ExpectedRuns(const BenchOptions& o) {
  const RowFilter filter(o.filter);
  size_t runs = 0;
  for (const RegisteredRow& row : RegisteredRows(RowSetOf(o)))
    if (filter.Matches(row.name))
      runs += static_cast<size_t>(row.baseline ? std::min(o.repetitions, o.baseline_repetitions)
                                               : o.repetitions);
  return runs;
}

Progress* g_progress = nullptr;

void OnRowEnter(const std::string& row, int64_t max_iterations) {
  if (g_progress) g_progress->Enter(row, max_iterations);
}

// A row filter (a POSIX extended regex over row names) as Google Benchmark must apply it: a
// baseline row registered with repetitions of its own has "/repeats:<n>" at the end of its name
// there, so each end anchor ($ outside brackets, not escaped) also accepts that suffix.
std::string GoogleBenchmarkFilter(const std::string& filter) {
  std::string out;
  bool escaped = false, bracket = false;
  for (const char ch : filter) {
    if (!escaped && !bracket && ch == '$') out += "(/repeats:[0-9]+)?";
    if (!escaped && ch == '[') bracket = true;
    if (!escaped && ch == ']') bracket = false;
    escaped = !escaped && ch == '\\';
    out += ch;
  }
  return out;
}

std::vector<std::string> GoogleBenchmarkArgs(const BenchOptions& o, int repetitions) {
  std::vector<std::string> args = {"posenc-report",
                                   "--benchmark_min_time=" + std::to_string(o.min_time),
                                   "--benchmark_repetitions=" + std::to_string(repetitions),
                                   "--benchmark_report_aggregates_only=true"};
  // Repetitions of different rows interleaved at random, so that a slow drift of the
  // machine's memory bandwidth does not favour the rows measured first.
  if (repetitions > 1) args.push_back("--benchmark_enable_random_interleaving=true");
  if (!o.filter.empty()) args.push_back("--benchmark_filter=" + GoogleBenchmarkFilter(o.filter));
  // Always given, empty where there is no JSON: a later Initialize (ConfirmPicks) would
  // otherwise keep the main run's file and write over it.
  args.push_back("--benchmark_out=" + o.json_path);
  if (!o.json_path.empty()) args.push_back("--benchmark_out_format=json");
  return args;
}

// Google Benchmark keeps argv[0]: `args` must outlive the run.
bool InitializeGoogleBenchmark(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  benchmark::Initialize(&argc, argv.data());
  return !benchmark::ReportUnrecognizedArguments(argc, argv.data());
}

std::optional<double> Rate(const Results& results, const std::string& name) {
  const auto it = results.find(name);
  if (it == results.end()) return std::nullopt;
  return it->second.bytes_per_second;
}

// scale * num / den printed with `format`, or "-" when either side is missing.
std::string Ratio(std::optional<double> num, std::optional<double> den, const char* format,
                  double scale = 1.0) {
  if (!num || !den || *den <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, scale * *num / *den);
  return buf;
}

std::string GigaBytes(std::optional<double> rate) { return Ratio(rate, 1e9, "%.1f"); }

bool AnyRow(const Results& results, const posenc_bench::RowGroup& group) {
  for (const std::string& variant : posenc_bench::GroupVariants(group))
    if (results.count(posenc_bench::RowName(group.kernel, variant, group.shape))) return true;
  return false;
}

// The multiply-class lane operations per second a variant can run (limit_fma of its vector
// layer: vector FMAs per ns x lanes); naive (compiled for this CPU): the best layer's.
std::optional<double> LaneFmaRate(const Results& results, const std::string& variant) {
  static const std::map<std::string, std::pair<std::string, double>> layer = {
      {"scalar", {"portable", 1}}, {"sse4", {"sse2", 4}},          {"avx2", {"avx2", 8}},
      {"avx512", {"avx512", 16}},  {"avx512bf16", {"avx512", 16}}, {"neon", {"portable", 1}},
      {"sve", {"portable", 1}},    {"rvv", {"portable", 1}}};
  const auto rate = [&](const std::string& name, double lanes) -> std::optional<double> {
    const auto it = results.find(posenc_bench::LimitFmaRowName(name));
    if (it == results.end() || it->second.fma_per_second <= 0) return std::nullopt;
    return it->second.fma_per_second * lanes;
  };
  if (variant == "naive") {
    std::optional<double> best;
    for (const auto& [name, l] : layer)
      if (const auto r = rate(l.first, l.second); r && (!best || *r > *best)) best = r;
    return best;
  }
  const auto it = layer.find(variant);
  return it == layer.end() ? std::nullopt : rate(it->second.first, it->second.second);
}

// The elements per second of the variant's operation mix for the group's kernel (its
// limit_mix row), if the bench has one and it ran.
std::optional<double> MixRate(const Results& results, const posenc_bench::RowGroup& group,
                              const std::string& variant) {
  const std::string name = posenc_bench::LimitMixRowName(group, variant);
  if (name.empty()) return std::nullopt;
  const auto it = results.find(name);
  if (it == results.end() || it->second.items_per_second <= 0) return std::nullopt;
  return it->second.items_per_second;
}

// A row's fraction of its roofline: the larger of its rate over the limit row's (bytes) and
// the time its operations need over its time: its elements at its variant's measured
// operation mix where it has one (limit_mix), else its multiply-class operations at the
// measured FMA rate.
std::optional<double> RooflineFraction(const Results& results, const posenc_bench::RowGroup& group,
                                       const std::string& variant, std::optional<double> limit) {
  const auto it = results.find(posenc_bench::RowName(group.kernel, variant, group.shape));
  if (it == results.end() || !limit || *limit <= 0) return std::nullopt;
  double fraction = it->second.bytes_per_second / *limit;
  if (const auto mix = MixRate(results, group, variant))
    return std::max(fraction, it->second.items_per_second * group.visible / *mix);
  const auto fma = LaneFmaRate(results, variant);
  if (fma && *fma > 0)
    fraction = std::max(
        fraction, it->second.items_per_second * group.visible * group.fma_ops_per_item / *fma);
  return fraction;
}

// One row per variant; rows missing from `results` (filtered out, or failed) show "-".
void PrintGroupTable(const Results& results, const posenc_bench::RowGroup& group,
                     std::ostream& out) {
  if (!AnyRow(results, group)) return;
  const auto row = [&](const std::string& variant) {
    return Rate(results, posenc_bench::RowName(group.kernel, variant, group.shape));
  };
  const auto limit = Rate(results, posenc_bench::LimitRowName(group.limit, group.limit_bytes));
  const auto scalar = row("scalar"), naive = row("naive");
  out << "\n"
      << group.kernel << " " << group.shape << "  (" << group.about << "; "
      << group.fma_ops_per_item << " multiply-class ops per element";
  if (group.visible < 1) out << ", " << static_cast<int>(100 * group.visible + 0.5) << "% computed";
  out << ")\n";
  // The variants whose compute side is an operation mix (limit_mix): its operations, and the
  // time per element the mix row measured.
  for (const std::string& variant : posenc_bench::GroupVariants(group)) {
    const auto mix = MixRate(results, group, variant);
    if (!mix) continue;
    const auto [ops, elements] = posenc_bench::LimitMixOps(group, variant);
    char mix_line[320];
    std::snprintf(mix_line, sizeof mix_line,
                  "  %s roofline: per %u elements %s: %.2f ns (limit_mix)\n", variant.c_str(),
                  elements, ops.c_str(), elements / *mix * 1e9);
    out << mix_line;
  }
  // A paired group: its rounds and, per ISA row, the quartiles of its per-round ratios.
  std::string paired;
  int rounds = 0;
  for (const std::string& variant : posenc_bench::GroupVariants(group)) {
    const auto it = results.find(posenc_bench::RowName(group.kernel, variant, group.shape));
    if (it == results.end() || it->second.paired_rounds == 0) continue;
    rounds = std::max(rounds, it->second.paired_rounds);
    char cell[64];
    std::snprintf(cell, sizeof cell, " %s %.0f-%.0f%%", variant.c_str(),
                  100 * it->second.of_limit_q25, 100 * it->second.of_limit_q75);
    paired += cell;
  }
  if (rounds > 0)
    out << "  paired rounds with the limit row: " << rounds << "; of limit, quartiles:" << paired
        << "\n";
  char line[160];
  const std::string of_limit = std::string("of ") + posenc_bench::LimitKindName(group.limit);
  std::snprintf(line, sizeof line, "  variant     GB/s %14s  of roofline  vs scalar  vs naive\n",
                of_limit.c_str());
  out << line;
  for (const std::string& variant : posenc_bench::GroupVariants(group)) {
    const auto rate = row(variant);
    const auto roof = RooflineFraction(results, group, variant, limit);
    std::snprintf(line, sizeof line, "  %-8s %7s %14s %12s %10s %9s\n", variant.c_str(),
                  GigaBytes(rate).c_str(), Ratio(rate, limit, "%.0f%%", 100.0).c_str(),
                  Ratio(roof, 1.0, "%.0f%%", 100.0).c_str(), Ratio(rate, scalar, "%.2fx").c_str(),
                  Ratio(rate, naive, "%.2fx").c_str());
    out << line;
  }
}

// The ISA variants (no "naive").
std::vector<std::string> IsaVariants() {
  std::vector<std::string> isas = posenc_bench::Variants();
  isas.pop_back();
  return isas;
}

// A line of a ratio table: per ISA, the bytes/s of the row of kernel `first` over that of
// kernel `second`, both at `shape` (they count the same bytes: a ratio of times).
struct RatioLine {
  std::string label, first, second, shape;
};

// The lines with at least one ratio in `results`, under `title` and a header of the ISAs; nothing
// if none has one.
void PrintRatioTable(const Results& results, const std::string& title,
                     const std::vector<RatioLine>& lines, std::ostream& out) {
  const std::vector<std::string> isas = IsaVariants();
  bool header = false;
  for (const RatioLine& l : lines) {
    std::string text;
    bool any = false;
    for (const std::string& isa : isas) {
      const auto a = Rate(results, posenc_bench::RowName(l.first, isa, l.shape));
      const auto b = Rate(results, posenc_bench::RowName(l.second, isa, l.shape));
      any |= a && b;
      char cell[32];
      std::snprintf(cell, sizeof cell, " %9s", Ratio(a, b, "%.2fx").c_str());
      text += cell;
    }
    if (!any) continue;
    if (!header) {
      out << "\n" << title << "\n";
      char head[64];
      std::snprintf(head, sizeof head, "  %-34s", "");
      out << head;
      for (const std::string& isa : isas) {
        std::snprintf(head, sizeof head, " %9s", isa.c_str());
        out << head;
      }
      out << "\n";
      header = true;
    }
    char label[64];
    std::snprintf(label, sizeof label, "  %-34s", l.label.c_str());
    out << label << text << "\n";
  }
}

// The shapes of a kernel's groups, in registration order.
std::vector<std::string> KernelShapes(const std::string& kernel) {
  std::vector<std::string> shapes;
  for (const posenc_bench::RowGroup& group : posenc_bench::RowGroups())
    if (group.kernel == kernel) shapes.push_back(group.shape);
  return shapes;
}

// rope_out against copy_then_rope, rope_apply against rope_f32_neox.
void PrintRuntimeRopeTables(const Results& results, std::ostream& out) {
  std::vector<RatioLine> out_lines;
  for (const char* pairs : {"neox", "gptj"}) {
    const std::string out_kernel = std::string("rope_out_f32_f32_") + pairs;
    const std::string copy_kernel = std::string("copy_then_rope_f32_f32_") + pairs;
    for (const std::string& shape : KernelShapes(out_kernel))
      out_lines.push_back(
          {out_kernel + " " + shape.substr(0, shape.find('/')), out_kernel, copy_kernel, shape});
  }
  PrintRatioTable(results,
                  "rope_out against copy_then_rope (memcpy, then posenc_rope_f32 in place): time "
                  "of\ncopy_then_rope / time of rope_out, per ISA (both count src + dst bytes)",
                  out_lines, out);
  std::vector<RatioLine> apply_lines;
  for (const std::string& shape : KernelShapes("rope_apply_f32_neox"))
    apply_lines.push_back({"rope_apply_f32_neox " + shape.substr(0, shape.find('/')),
                           "rope_apply_f32_neox", "rope_f32_neox", shape});
  PrintRatioTable(results,
                  "rope_apply (factors made beforehand, untimed) against rope_f32_neox (plan): "
                  "time of\nrope_f32_neox / time of rope_apply, per ISA (both count Q + K in "
                  "place)",
                  apply_lines, out);
}

// The fused ALiBi softmax against the two-pass way (posenc_alibi_add_f32, then posenc_softmax).
void PrintAlibiSoftmaxTable(const Results& results, std::ostream& out) {
  std::vector<RatioLine> lines;
  for (const std::string& shape : KernelShapes("alibi_add_then_softmax_f32"))
    lines.push_back({shape.substr(shape.find('/') + 1), "alibi_softmax_f32",
                     "alibi_add_then_softmax_f32", shape});
  PrintRatioTable(
      results,
      "alibi_softmax_f32 (fused) against alibi_add_then_softmax_f32 (posenc_alibi_add_f32, "
      "then\nposenc_softmax): time of the two passes / time of the fused call, per ISA "
      "(heads:32)",
      lines, out);
}

// RoPE ns per token per layer of the decode rows, and the speedups between the modes.
void PrintDecodeLayersTable(const Results& results, std::ostream& out) {
  const auto ns = [&](const std::string& variant,
                      const std::string& mode) -> std::optional<double> {
    const auto it = results.find(posenc_bench::DecodeLayersRunName(variant, mode));
    if (it == results.end() || it->second.rope_ns_per_layer < 0) return std::nullopt;
    return it->second.rope_ns_per_layer;
  };
  const auto naive = ns("naive", "");
  bool any = naive.has_value();
  for (const std::string& isa : IsaVariants())
    for (const std::string& mode : posenc_bench::DecodeLayersModes())
      any |= ns(isa, mode).has_value();
  if (!any) return;
  out << "\nrope_decode_layers_f32 " << posenc_bench::DecodeLayersShape()
      << "  (one decode token through 32 layers, each\nlayer's RoPE after an 8 MiB weight "
         "stand-in went through the caches): RoPE ns per token per layer;\nshared: "
         "posenc_rope_factors_compute once per token (included) + 2 posenc_rope_apply per "
         "layer;\npercall: posenc_rope_f32 per layer; naive: powf/cosf/sinf inline per head "
         "and pair\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-8s %11s %10s %18s %17s %16s\n", "variant", "percall ns",
                "shared ns", "percall/shared", "naive/percall", "naive/shared");
  out << line;
  const auto cell = [](std::optional<double> v) {
    if (!v) return std::string("-");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", *v);
    return std::string(buf);
  };
  // Ratios of times: how many times faster the second is.
  const auto speedup = [](std::optional<double> slow, std::optional<double> fast) {
    return Ratio(slow, fast, "%.2fx");
  };
  for (const std::string& isa : IsaVariants()) {
    const auto percall = ns(isa, "percall"), shared = ns(isa, "shared");
    std::snprintf(line, sizeof line, "  %-8s %11s %10s %18s %17s %16s\n", isa.c_str(),
                  cell(percall).c_str(), cell(shared).c_str(), speedup(percall, shared).c_str(),
                  speedup(naive, percall).c_str(), speedup(naive, shared).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-8s %11s\n", "naive", cell(naive).c_str());
  out << line;
  // The floor: a plain loop applying a table made once per token (no library call).
  const auto naive_factors = ns("naive", "factors");
  std::snprintf(line, sizeof line,
                "  %-8s %11s  (naive with cos/sin once per token: the data's "
                "own cost)\n",
                "naive", cell(naive_factors).c_str());
  out << line;
}

// The cold rows: RoPE ns per layer of each form after E MiB streamed, and posenc's time over
// the floor's and the runtime loop's.
void PrintColdLayerTable(const Results& results, std::ostream& out) {
  const auto ns = [&](const std::string& form, size_t mib) -> std::optional<double> {
    const auto it = results.find(posenc_bench::ColdLayerRunName(form, mib));
    if (it == results.end() || it->second.rope_ns_per_layer < 0) return std::nullopt;
    return it->second.rope_ns_per_layer;
  };
  bool any = false;
  for (size_t mib : posenc_bench::ColdLayerStreamMib())
    for (const std::string& form : posenc_bench::ColdLayerForms()) any |= ns(form, mib).has_value();
  if (!any) return;
  const auto it = results.find(posenc_bench::ColdLayerRunName("posenc_call", 32));
  const std::string isa =
      it == results.end() || it->second.label.empty() ? "" : " (" + it->second.label + ")";
  out << "\nrope_cold_layer_f32 (RoPE of one decode token's q and k, 32 Q + 8 K heads x 128, "
         "in each of 32\nlayers, after E MiB of weights streamed): ns per layer; posenc: "
         "factors once per token +\nposenc_inline.h's apply step in the caller per layer; "
         "posenc_call: the same factors + 2\nposenc_rope_apply per layer"
      << isa << "; floor: a table once per token + a plain loop;\nruntime_loop: "
      << "powf/cosf/sinf inline\n";
  char line[200];
  std::snprintf(line, sizeof line, "  %-10s %10s %14s %10s %16s %13s %20s\n", "stream MiB",
                "posenc ns", "posenc_call ns", "floor ns", "runtime_loop ns", "posenc/floor",
                "posenc/runtime_loop");
  out << line;
  const auto cell = [](std::optional<double> v) { return Ratio(v, 1.0, "%.0f"); };
  for (size_t mib : posenc_bench::ColdLayerStreamMib()) {
    const auto posenc = ns("posenc", mib), call = ns("posenc_call", mib), floor = ns("floor", mib),
               runtime = ns("runtime_loop", mib);
    std::snprintf(line, sizeof line, "  %-10zu %10s %14s %10s %16s %13s %20s\n", mib,
                  cell(posenc).c_str(), cell(call).c_str(), cell(floor).c_str(),
                  cell(runtime).c_str(), Ratio(posenc, floor, "%.2fx").c_str(),
                  Ratio(posenc, runtime, "%.2fx").c_str());
    out << line;
  }
}

std::string LimitLabel(const Results& results, const std::string& name) {
  const auto it = results.find(name);
  return it == results.end() ? std::string("-") : it->second.label;
}

void PrintLimitTable(const Results& results, std::ostream& out) {
  out << "\nLimits: the fastest plain stream found per size (GB/s counts bytes read + written)\n"
      << "         bytes  rmw GB/s  rmw loop            write GB/s  write loop\n";
  std::vector<size_t> copy_sizes;
  for (const posenc_bench::LimitRow& limit : posenc_bench::LimitRows()) {
    if (limit.kind == posenc_bench::LimitKind::kCopy) copy_sizes.push_back(limit.bytes);
    if (limit.kind != posenc_bench::LimitKind::kRmw) continue;
    const size_t bytes = limit.bytes;
    const std::string rmw = posenc_bench::LimitRowName(posenc_bench::LimitKind::kRmw, bytes);
    const std::string write = posenc_bench::LimitRowName(posenc_bench::LimitKind::kWrite, bytes);
    if (!results.count(rmw) && !results.count(write)) continue;
    char line[160];
    std::snprintf(line, sizeof line, "  %12zu %9s  %-18s %10s  %s\n", bytes,
                  GigaBytes(Rate(results, rmw)).c_str(), LimitLabel(results, rmw).c_str(),
                  GigaBytes(Rate(results, write)).c_str(), LimitLabel(results, write).c_str());
    out << line;
  }
  bool copy_header = false;
  for (size_t bytes : copy_sizes) {
    const std::string copy = posenc_bench::LimitRowName(posenc_bench::LimitKind::kCopy, bytes);
    if (!results.count(copy)) continue;
    if (!copy_header) {
      out << "  copy: n/2 bytes read from one buffer, n/2 written to another\n"
          << "             n copy GB/s  copy loop\n";
      copy_header = true;
    }
    char line[160];
    std::snprintf(line, sizeof line, "  %12zu %9s  %s\n", bytes,
                  GigaBytes(Rate(results, copy)).c_str(), LimitLabel(results, copy).c_str());
    out << line;
  }
}

// The compute limits: vector FMAs per ns of each layer's independent chains.
void PrintFmaTable(const Results& results, std::ostream& out) {
  bool header = false;
  for (const std::string& name : posenc_bench::LimitFmaRowNames()) {
    const auto it = results.find(name);
    if (it == results.end() || it->second.fma_per_second < 0) continue;
    if (!header) {
      out << "  compute: independent chains of vector FMAs (limit_fma)\n";
      header = true;
    }
    char line[160];
    std::snprintf(line, sizeof line, "  %-22s %6.2f vector FMA/ns  (%s)\n", name.c_str(),
                  it->second.fma_per_second * 1e-9, it->second.label.c_str());
    out << line;
  }
}

// Per round, row a's time over row b's times b's bytes over a's: the ratio of a's rate to b's.
std::vector<double> RoundRatios(const posenc_bench::PairedRow& a,
                                const posenc_bench::PairedRow& b) {
  std::vector<double> ratios;
  for (size_t i = 0; i < a.seconds.size() && i < b.seconds.size(); ++i)
    ratios.push_back(static_cast<double>(a.bytes_per_pass) / static_cast<double>(b.bytes_per_pass) *
                     b.seconds[i] / a.seconds[i]);
  return ratios;
}

// The paired groups (posenc_bench::IsPairedGroup) of the run's row set, each measured in
// paired rounds with the ISA rows the filter selects and its limit row; their rows go into
// `results` (a kernel row: its limit row's median rate, over every group's rounds with it,
// times the median of its per-round ratios to it; a limit row: that median rate), and into
// `json` ({row: {bytes_per_second, rounds, of_limit: [q25, median, q75]}}).
void MeasurePairedGroups(const BenchOptions& options, Results& results, Failures& failures,
                         JsonValue& json) {
  const RowFilter filter(options.filter);
  struct Measured {
    std::vector<double> of_limit;
    std::string limit;
    int64_t bytes_per_pass, items_per_pass;
  };
  std::map<std::string, Measured> rows;
  std::vector<std::string> order;                          // rows as first measured
  std::map<std::string, std::vector<double>> limit_rates;  // per round, every group's
  std::map<std::string, std::string> limit_labels;
  // The groups with the variants the filter leaves them.
  std::vector<std::pair<const posenc_bench::RowGroup*, std::vector<std::string>>> groups;
  for (const posenc_bench::RowGroup& group : posenc_bench::RowGroups()) {
    if (!posenc_bench::InRowSet(group, RowSetOf(options)) || !posenc_bench::IsPairedGroup(group))
      continue;
    std::vector<std::string> variants;
    for (const std::string& variant : posenc_bench::GroupVariants(group))
      if (posenc_bench::IsPairedRow(group, variant) &&
          filter.Matches(posenc_bench::RowName(group.kernel, variant, group.shape)))
        variants.push_back(variant);
    if (!variants.empty()) groups.emplace_back(&group, variants);
  }
  // Each group's time in kPairedSweeps parts, every sweep over all the groups (the odd ones
  // backwards): the state of the host's shared caches and memory (its other tenants) moves
  // the ratio of a kernel to a stream loop by up to 30% from one minute to the next at these
  // sizes, and rounds spread over the whole phase average those states.
  for (int sweep = 0; sweep < kPairedSweeps; ++sweep) {
    for (size_t k = 0; k < groups.size(); ++k) {
      const auto& [group, variants] = groups[sweep % 2 ? groups.size() - 1 - k : k];
      std::fprintf(stderr, "posenc-report: paired rounds, sweep %d/%d, group %zu/%zu  %s %s\n",
                   sweep + 1, kPairedSweeps, k + 1, groups.size(), group->kernel.c_str(),
                   group->shape.c_str());
      const std::vector<posenc_bench::PairedRow> measured = posenc_bench::MeasurePaired(
          *group, variants, options.paired_seconds / kPairedSweeps,
          (options.paired_min_rounds + kPairedSweeps - 1) / kPairedSweeps,
          kPairedMaxRounds / kPairedSweeps);
      const posenc_bench::PairedRow& limit = measured.back();
      for (double s : limit.seconds)
        limit_rates[limit.name].push_back(static_cast<double>(limit.bytes_per_pass) / s);
      limit_labels[limit.name] = limit.label;
      for (size_t i = 0; i + 1 < measured.size(); ++i) {
        const posenc_bench::PairedRow& row = measured[i];
        if (!row.error.empty()) {
          if (sweep == 0) std::cerr << "\nposenc-report: " << row.name << ": " << row.error << "\n";
          failures[row.name] = row.error;
          continue;
        }
        auto [it, fresh] = rows.try_emplace(
            row.name, Measured{{}, limit.name, row.bytes_per_pass, row.items_per_pass});
        if (fresh) order.push_back(row.name);
        const std::vector<double> ratios = RoundRatios(row, limit);
        it->second.of_limit.insert(it->second.of_limit.end(), ratios.begin(), ratios.end());
      }
    }
  }
  json = JsonValue::Object();
  json.Set("seconds_per_group", JsonValue::Number(options.paired_seconds));
  json.Set("min_rounds", JsonValue::Number(options.paired_min_rounds));
  JsonValue json_rows = JsonValue::Object();
  for (const auto& [name, rates] : limit_rates) {
    RowResult& r = results[name];
    r = RowResult();
    r.bytes_per_second = Median(rates);
    r.label = limit_labels[name];
    r.paired_rounds = static_cast<int>(rates.size());
    JsonValue& j = json_rows.Set(name, JsonValue::Object());
    j.Set("bytes_per_second", JsonValue::Number(r.bytes_per_second));
    j.Set("rounds", JsonValue::Number(r.paired_rounds));
    j.Set("loops", JsonValue::String(r.label));
  }
  for (const std::string& name : order) {
    const Measured& m = rows.at(name);
    RowResult& r = results[name];
    r = RowResult();
    const double of_limit = Median(m.of_limit);
    r.bytes_per_second = results[m.limit].bytes_per_second * of_limit;
    r.items_per_second = r.bytes_per_second * static_cast<double>(m.items_per_pass) /
                         static_cast<double>(m.bytes_per_pass);
    r.paired_rounds = static_cast<int>(m.of_limit.size());
    r.of_limit_q25 = Quantile(m.of_limit, 0.25);
    r.of_limit_q75 = Quantile(m.of_limit, 0.75);
    JsonValue& j = json_rows.Set(name, JsonValue::Object());
    j.Set("bytes_per_second", JsonValue::Number(r.bytes_per_second));
    j.Set("rounds", JsonValue::Number(r.paired_rounds));
    j.Set("limit", JsonValue::String(m.limit));
    JsonValue quartiles = JsonValue::Array();
    for (double q : {r.of_limit_q25, of_limit, r.of_limit_q75})
      quartiles.Push(JsonValue::Number(q));
    j.Set("of_limit", quartiles);
  }
  json.Set("rows", json_rows);
}

// One group of the dispatcher check: the row of the tier that serves its kernel and the
// fastest ISA row, the ratio of their rates in the main run and, where that was below
// BenchOptions::pick_within, in the side-by-side run (-1 where there was none).
struct PickCheck {
  const posenc_bench::RowGroup* group;
  std::string pick, fastest;
  double ratio = 0, side_by_side = -1;
};

// For every group that calls one kernel: the dispatcher's pick for that kernel (taken before
// the rows ran) against the fastest ISA row measured in this run.
std::vector<PickCheck> PickChecks(const Results& results, const std::vector<int>& picks) {
  std::vector<PickCheck> checks;
  for (const posenc_bench::RowGroup& group : posenc_bench::RowGroups()) {
    if (group.dispatch_kernel < 0 || group.dispatch_kernel >= static_cast<int>(picks.size()))
      continue;
    const std::string pick = posenc_isa_name(static_cast<posenc_isa>(picks[group.dispatch_kernel]));
    const auto picked = Rate(results, posenc_bench::RowName(group.kernel, pick, group.shape));
    std::optional<double> best;
    std::string fastest;
    for (const std::string& variant : posenc_bench::GroupVariants(group)) {
      if (variant == "naive") continue;
      const auto rate = Rate(results, posenc_bench::RowName(group.kernel, variant, group.shape));
      if (rate && (!best || *rate > *best)) best = rate, fastest = variant;
    }
    if (!picked || !best) continue;
    checks.push_back({&group, pick, fastest, *picked / *best});
  }
  return checks;
}

// A row name as a POSIX extended regex matching exactly it.
std::string ExactRowRegex(const std::string& name) {
  std::string re = "^";
  for (char ch : name) {
    if (std::string("\\^$.|?*+()[{").find(ch) != std::string::npos) re += '\\';
    re += ch;
  }
  return re + "$";
}

// The groups whose pick ran below pick_within of the fastest row measured again, the two rows
// alone, their repetitions interleaved (2 x the main run's + 1): within the main run the two
// rows' repetitions lie minutes apart, and at DRAM and L3 sizes this host's bandwidth drifts
// more than 5% in minutes (learned_add_f32 at 512 x 4096: avx2 at 0.92x avx512's rate in one
// report, 1.04x and 1.06x side by side minutes later); measured together, drift moves both
// alike. The check's verdict is the side-by-side ratio where there is one; both are printed.
// A group that touches 16 MiB or more (posenc_bench::IsPairedCheck) has its two rows measured
// again in paired rounds (3 x a paired group's time), the verdict the median of the per-round
// ratios of the two.
void ConfirmPicks(const BenchOptions& options, std::vector<PickCheck>& checks) {
  for (PickCheck& check : checks) {
    if (check.ratio >= options.pick_within) continue;
    if (posenc_bench::IsPairedCheck(*check.group)) {
      const std::vector<posenc_bench::PairedRow> measured = posenc_bench::MeasurePaired(
          *check.group, {check.pick, check.fastest}, 3 * options.paired_seconds,
          3 * options.paired_min_rounds, 3 * kPairedMaxRounds);
      if (measured.size() == 3 && measured[0].error.empty() && measured[1].error.empty())
        check.side_by_side = Median(RoundRatios(measured[0], measured[1]));
      continue;
    }
    const std::string picked =
        posenc_bench::RowName(check.group->kernel, check.pick, check.group->shape);
    const std::string fastest =
        posenc_bench::RowName(check.group->kernel, check.fastest, check.group->shape);
    BenchOptions again = options;
    again.filter = ExactRowRegex(picked) + "|" + ExactRowRegex(fastest);
    again.json_path.clear();
    std::vector<std::string> args = GoogleBenchmarkArgs(again, 2 * options.repetitions + 1);
    if (!InitializeGoogleBenchmark(args)) continue;
    Results results;
    Failures failures;  // both rows ran in the main run
    CollectingReporter reporter(results, failures, options.verbose);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    const auto a = Rate(results, picked), b = Rate(results, fastest);
    if (a && b) check.side_by_side = *a / *b;
  }
}

void PrintPickCheck(const std::vector<PickCheck>& checks, double pick_within, std::ostream& out) {
  if (checks.empty()) return;
  std::ostringstream lines;
  int within = 0;
  for (const PickCheck& check : checks) {
    const double verdict = check.side_by_side >= 0 ? check.side_by_side : check.ratio;
    const bool ok = verdict >= pick_within;
    within += ok;
    char again[16] = "     -";
    if (check.side_by_side >= 0) std::snprintf(again, sizeof again, "%6.2f", check.side_by_side);
    char line[220];
    std::snprintf(line, sizeof line, "  %-26s %-49s %-10s %-10s %6.2f  %s  %s\n",
                  check.group->kernel.c_str(), check.group->shape.c_str(), check.pick.c_str(),
                  check.fastest.c_str(), check.ratio, again, ok ? "PASS" : "FAIL");
    lines << line;
  }
  char bound[16];
  std::snprintf(bound, sizeof bound, "%.2fx", pick_within);
  out << "\nDispatcher check: the variant that serves each kernel (posenc_kernel_isa, chosen "
         "before the\nrows ran) against the fastest ISA row of the same group in this run; "
         "PASS where the\npick runs at "
      << bound
      << " the fastest's rate or more. Where 'ratio' is below that, the two rows were measured "
         "again side by side (their\nrepetitions interleaved, 2n + 1 of them): 'again', the "
         "ratio that decides (groups that touch 16 MiB or more: paired rounds of the two rows)\n";
  char head[200];
  std::snprintf(head, sizeof head, "  %-26s %-49s %-10s %-10s %6s  %6s\n", "kernel", "shape",
                "picked", "fastest", "ratio", "again");
  out << head << lines.str();
  out << "  " << within << " of " << checks.size() << " groups at " << bound
      << " the fastest variant's rate or more"
      << (within == static_cast<int>(checks.size()) ? "" : " (see FAIL)") << "\n";
}

void PrintTables(const Results& results, std::ostream& out) {
  out << "\nThroughput in GB/s of bytes read + written. A kernel row and the limit row of its\n"
         "table count the same bytes, so every ratio is a time ratio, except learned_add: its\n"
         "3n bytes against limit_rmw's 2n for its n-byte x make 'of limit' a ratio of\n"
         "bandwidths (1.5 x the time ratio; it may exceed 100%), and softmax with a mask array\n"
         "(mask:kvcache, kvcache16): 2n for its n bytes of scores in place plus the mask's m\n"
         "bytes, read once (shared by the heads), against limit_rmw's 2n (1.6% above the time\n"
         "ratio for an f32 mask on f32 scores). Causal alibi_add and the causal and windowed\n"
         "softmax rows count their hidden elements (only written) as read and written. naive:\n"
         "the plain C loop an integrator writes, -O3 -march=native: rope with a cos/sin table\n"
         "given for free (its reads not counted), sinusoids with libm sinf/cosf of the float32\n"
         "angle (float)p * inv_freq, ALiBi's triple loop, the softmax row loop with libm expf,\n"
         "learned's gather-add loop.\n"
         "Groups of 16 MiB and more (L3 and DRAM sizes, where this kind of host's bandwidth\n"
         "moves 10-20% between two runs of a row and ~2x within minutes): their SIMD rows and\n"
         "their limit row measured apart, in paired rounds: the SIMD rows on one copy of the\n"
         "buffers, the limit row on its own; the limit row timed (the best of three of its\n"
         "loops), then rounds of the SIMD rows (one timed pass each, the order rotated each\n"
         "round), then the limit row again; a row after one on other buffers streams warm-up\n"
         "passes until they stop getting faster, after one on the same buffers one pass;\n"
         "three sweeps over those groups): a row's 'of limit' is the median of its per-round\n"
         "ratios to the limit row's better time (quartiles listed), its GB/s that times the\n"
         "limit's median over every sweep, the limit rows of those sizes those medians. Their\n"
         "scalar and naive rows are Google Benchmark's, as above.\n"
         "Out of place (rope_out, and copy_then_rope for the same job) counts src + dst bytes\n"
         "against limit_copy of those bytes; rope_apply counts Q + K in place, as rope does.\n"
         "Of roofline: the larger of the row's rate over its limit row's and the time its\n"
         "multiply-class operations (FMA, multiply, scale; counted per kernel in the bench's\n"
         "FmaOpsPerItem) need at limit_fma of the variant's vector layer over the row's time;\n"
         "for the variants with an operation mix (the 16-bit conversions and roundings that\n"
         "bind them: bench/limit_mix.h, the 'roofline: per n elements' lines), the time its\n"
         "elements need at that mix's measured rate instead.\n";
  for (const posenc_bench::RowGroup& group : posenc_bench::RowGroups())
    PrintGroupTable(results, group, out);
  PrintRuntimeRopeTables(results, out);
  PrintAlibiSoftmaxTable(results, out);
  PrintDecodeLayersTable(results, out);
  PrintColdLayerTable(results, out);
  PrintLimitTable(results, out);
  PrintFmaTable(results, out);
}

// The rows that did not run: a group whose row is missing drops out of the dispatcher check
// and shows "-" in its table, so they are listed where the report ends.
void PrintFailures(const Failures& failures, std::ostream& out) {
  if (failures.empty()) return;
  out << "\nRows that did not run (" << failures.size() << "; setup or first call failed):\n";
  for (const auto& [name, why] : failures) out << "  " << name << ": " << why << "\n";
}

}  // namespace

bool RunBenchmarks(const BenchOptions& options, std::ostream& out, JsonValue* paired) {
  std::vector<std::string> args = GoogleBenchmarkArgs(options, options.repetitions);
  if (!InitializeGoogleBenchmark(args)) return false;
  // (0: the main run's repetitions; Google Benchmark then keeps the baseline rows' names)
  posenc_bench::RegisterAll(
      RowSetOf(options), /*paired_apart=*/true,
      options.baseline_repetitions < options.repetitions ? options.baseline_repetitions : 0);
  posenc_bench::AddCpuContext();
  Results results;
  Failures failures;
  CollectingReporter reporter(results, failures, options.verbose);
  out << "\nRunning benchmarks ("
      << (options.full ? "every row"
                       : "core rows: each kernel at a cache-resident and at its largest shape; "
                         "--full: every row")
      << "; min_time " << options.min_time << " s, " << options.repetitions
      << " repetition(s) interleaved, scalar and naive rows "
      << std::min(options.repetitions, options.baseline_repetitions) << "; progress on stderr)..."
      << std::endl;
  const auto start = std::chrono::steady_clock::now();
  Progress progress(ExpectedRuns(options), stderr);
  if (!options.verbose) {
    g_progress = &progress;
    posenc_bench::SetRowEnterHook(OnRowEnter);
  }
  benchmark::RunSpecifiedBenchmarks(&reporter);
  posenc_bench::SetRowEnterHook(nullptr);
  g_progress = nullptr;
  if (!options.verbose) progress.Finish();
  JsonValue paired_json;
  MeasurePairedGroups(options, results, failures, paired_json);
  if (paired) *paired = paired_json;
  std::vector<PickCheck> checks = PickChecks(results, options.kernel_picks);
  ConfirmPicks(options, checks);
  benchmark::Shutdown();
  const auto seconds = static_cast<long>(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() + 0.5);
  out << "Benchmarks: " << seconds / 60 << " min " << seconds % 60 << " s\n";
  PrintTables(results, out);
  PrintPickCheck(checks, options.pick_within, out);
  PrintFailures(failures, out);
  return !results.empty();
}

JsonValue RowGroupsJson() {
  JsonValue groups = JsonValue::Array();
  for (const posenc_bench::RowGroup& g : posenc_bench::RowGroups()) {
    JsonValue& group = groups.Push(JsonValue::Object());
    group.Set("kernel", JsonValue::String(g.kernel));
    group.Set("shape", JsonValue::String(g.shape));
    group.Set("limit", JsonValue::String(posenc_bench::LimitRowName(g.limit, g.limit_bytes)));
    group.Set("buffer_bytes", JsonValue::Number(static_cast<double>(g.limit_bytes)));
    group.Set("about", JsonValue::String(g.about));
  }
  return groups;
}

}  // namespace posenc_report
