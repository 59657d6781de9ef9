#include "report_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <posenc.h>

#include "report_json.h"
#include "report_plot.h"
#include "report_rates.h"

namespace posenc_report {
namespace {

struct CompareOptions {
  std::string out_dir = "compare";
  bool plots = true;
  std::vector<std::string> files;
};

// One saved report: bytes/s per row (the median of its repetitions) and what ran it.
struct SavedReport {
  std::string path, cpu, active, date;
  std::map<std::string, double> rates;
  std::vector<std::pair<std::string, std::string>> groups;  // (kernel, shape), in order
  JsonValue plot;  // what posenc_plot.py draws of this file (see PlotJson)
};

void PrintUsage() {
  std::fprintf(stderr,
               "usage: posenc-report compare [--out DIR] [--no-plots] A.json B.json ...\n"
               "  A.json ...   posenc-report's JSON files (or posenc_bench --benchmark_out ones)\n"
               "  --out DIR    where compare.txt and the plot (compare.png, .svg) go "
               "(default: compare)\n"
               "  --no-plots   the table only\n");
}

bool ParseCompareOptions(int argc, char** argv, CompareOptions& o) {
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc)
      o.out_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--no-plots"))
      o.plots = false;
    else if (argv[i][0] == '-')
      return false;
    else
      o.files.push_back(argv[i]);
  }
  return !o.files.empty();
}

// The file as posenc_plot.py reads a report: its path, CPU, active ISA, row groups (the
// report's own, else estimated from the rows) and bytes/s per row.
JsonValue PlotJson(const SavedReport& r, const JsonValue* groups, const RowRates& rates) {
  JsonValue plot = JsonValue::Object();
  plot.Set("path", JsonValue::String(r.path));
  JsonValue& cpu = plot.Set("cpu", JsonValue::Object());
  cpu.Set("model", JsonValue::String(r.cpu));
  cpu.Set("isa", JsonValue::Object()).Set("active", JsonValue::String(r.active));
  plot.Set("groups", groups ? *groups : EstimatedRowGroupsJson(rates));
  plot.Set("bytes_per_second", RatesJson(rates));
  return plot;
}

bool LoadReport(const std::string& path, SavedReport& r, std::string& error) {
  std::string text;
  if (!ReadFile(path, text)) {
    error = "cannot read it";
    return false;
  }
  JsonValue doc;
  if (!JsonValue::Parse(text, doc, error)) return false;
  const JsonValue* benchmarks = doc.Find("benchmarks");
  if (!benchmarks || benchmarks->type() != JsonValue::Type::kArray) {
    error = "no \"benchmarks\" array (not Google Benchmark's JSON)";
    return false;
  }
  r.path = path;
  RowRates rates = MedianRates(*benchmarks);
  // A posenc-report file's rows measured in paired rounds are in its "posenc" object alone.
  const JsonValue* own = doc.Find("posenc");
  const JsonValue* paired = own ? own->Find("paired") : nullptr;
  if (const JsonValue* rows = paired ? paired->Find("rows") : nullptr) AddPairedRates(*rows, rates);
  r.rates = rates.bytes_per_second;
  const JsonValue empty = JsonValue::Object();
  const JsonValue* context = doc.Find("context");
  if (!context) context = &empty;
  const JsonValue* posenc = doc.Find("posenc");
  const JsonValue* cpu = posenc ? posenc->Find("cpu") : nullptr;
  const JsonValue* isa = cpu ? cpu->Find("isa") : nullptr;
  r.cpu = cpu ? cpu->StringOr("model", "") : context->StringOr("posenc_cpu", "");
  if (r.cpu.empty()) r.cpu = "unknown CPU";
  r.active = isa ? isa->StringOr("active", "") : context->StringOr("posenc_isa_active", "");
  if (r.active.empty()) {  // a posenc_bench file: the best available ISA is what runs
    std::istringstream available(context->StringOr("posenc_isas_available", ""));
    for (std::string w; available >> w;) r.active = w;
  }
  r.date = context->StringOr("date", "");
  const JsonValue* groups = posenc ? posenc->Find("groups") : nullptr;
  if (groups)
    for (const JsonValue& g : groups->items())
      r.groups.emplace_back(g.StringOr("kernel", ""), g.StringOr("shape", ""));
  r.plot = PlotJson(r, groups, rates);
  return true;
}

struct RowName {
  std::string kernel, variant, shape;
};

RowName SplitName(const std::string& name) {
  RowName n;
  const size_t a = name.find('/');
  n.kernel = name.substr(0, a);
  if (a == std::string::npos) return n;
  const size_t b = name.find('/', a + 1);
  n.variant = name.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  if (b != std::string::npos) n.shape = name.substr(b + 1);
  return n;
}

// ISAs in the header's enum order, then anything else, then the naive loop.
int VariantRank(const std::string& variant) {
  posenc_isa isa;
  if (posenc_isa_from_name(variant.c_str(), &isa) == POSENC_OK) return static_cast<int>(isa);
  return variant == "naive" ? POSENC_ISA_COUNT + 1 : POSENC_ISA_COUNT;
}

// Every row of any file, as sections: one per (kernel, shape) group in the files' group
// order (unknown groups after, by name), its variants in ISA order; then the limit rows by
// size.
std::vector<std::vector<std::string>> Sections(const std::vector<SavedReport>& reports) {
  std::vector<std::string> group_order;
  for (const SavedReport& r : reports)
    for (const auto& [kernel, shape] : r.groups)
      if (std::find(group_order.begin(), group_order.end(), kernel + "|" + shape) ==
          group_order.end())
        group_order.push_back(kernel + "|" + shape);
  std::set<std::string> names, unknown_groups;
  for (const SavedReport& r : reports)
    for (const auto& [name, rate] : r.rates) names.insert(name);
  std::map<std::string, std::vector<std::string>> by_group;
  std::vector<std::string> limits;
  for (const std::string& name : names) {
    if (IsLimitRow(name)) {
      limits.push_back(name);
      continue;
    }
    const RowName n = SplitName(name);
    const std::string key = n.kernel + "|" + n.shape;
    if (std::find(group_order.begin(), group_order.end(), key) == group_order.end())
      unknown_groups.insert(key);
    by_group[key].push_back(name);
  }
  group_order.insert(group_order.end(), unknown_groups.begin(), unknown_groups.end());
  std::vector<std::vector<std::string>> sections;
  for (const std::string& key : group_order) {
    std::vector<std::string>& rows = by_group[key];
    if (rows.empty()) continue;
    std::stable_sort(rows.begin(), rows.end(), [](const std::string& a, const std::string& b) {
      return VariantRank(SplitName(a).variant) < VariantRank(SplitName(b).variant);
    });
    sections.push_back(rows);
  }
  std::stable_sort(limits.begin(), limits.end(), [](const std::string& a, const std::string& b) {
    return LimitRowBytes(a) < LimitRowBytes(b);
  });
  if (!limits.empty()) sections.push_back(limits);
  return sections;
}

std::optional<double> RateOf(const SavedReport& r, const std::string& name) {
  const auto it = r.rates.find(name);
  if (it == r.rates.end()) return std::nullopt;
  return it->second;
}

std::string Format(const char* format, double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string RightAligned(const std::string& s, size_t width) {
  return std::string(s.size() < width ? width - s.size() : 0, ' ') + s;
}

std::string Label(const SavedReport& r, size_t index) {
  return "[" + std::to_string(index + 1) + "] " + r.cpu + " (" + r.active + ")";
}

void PrintTable(const std::vector<SavedReport>& reports, std::ostream& out) {
  const auto sections = Sections(reports);
  size_t width = 3;
  for (const auto& rows : sections)
    for (const std::string& name : rows) width = std::max(width, name.size());
  out << "GB/s of bytes read + written (median of a report's repetitions); [n]/[1]: ratio to "
         "the first file; -: row not in that file\n";
  size_t label_width = 0;
  for (size_t i = 0; i < reports.size(); ++i)
    label_width = std::max(label_width, Label(reports[i], i).size());
  for (size_t i = 0; i < reports.size(); ++i) {
    const std::string label = Label(reports[i], i);
    out << "  " << label << std::string(label_width - label.size() + 2, ' ') << reports[i].path
        << (reports[i].date.empty() ? "" : ", " + reports[i].date) << "\n";
  }
  std::string header = "\nrow" + std::string(width - 3, ' ');
  for (size_t i = 0; i < reports.size(); ++i) {
    const std::string n = "[" + std::to_string(i + 1) + "]";
    header += RightAligned(n + " GB/s", 11);
    if (i > 0) header += RightAligned(n + "/[1]", 9);
  }
  out << header << "\n";
  for (const auto& rows : sections) {
    for (const std::string& name : rows) {
      std::string line = name + std::string(width - name.size(), ' ');
      const auto first = RateOf(reports[0], name);
      for (size_t i = 0; i < reports.size(); ++i) {
        const auto rate = RateOf(reports[i], name);
        line += RightAligned(rate ? Format("%.1f", *rate / 1e9) : "-", 11);
        if (i == 0) continue;
        const bool ratio = rate && first && *first > 0;
        line += RightAligned(ratio ? Format("%.2fx", *rate / *first) : "-", 9);
      }
      out << line << "\n";
    }
    out << "\n";
  }
}

// Geometric mean of [n]/[1] over the kernel rows (and separately the limit rows) both have.
void PrintSummary(const std::vector<SavedReport>& reports, std::ostream& out) {
  if (reports.size() < 2) return;
  out << "Geometric mean of the ratio to [1] over the rows both files have:\n";
  for (size_t i = 1; i < reports.size(); ++i) {
    double log_sum[2] = {0, 0};
    size_t count[2] = {0, 0};
    for (const auto& [name, rate] : reports[i].rates) {
      const auto first = RateOf(reports[0], name);
      if (!first || *first <= 0 || rate <= 0) continue;
      const int limit = IsLimitRow(name) ? 1 : 0;
      log_sum[limit] += std::log(rate / *first);
      ++count[limit];
    }
    std::string line = "  [" + std::to_string(i + 1) + "]/[1]:";
    const char* what[2] = {"kernel rows", "limit rows"};
    for (int k = 0; k < 2; ++k)
      line += count[k] ? Format(" %.3fx", std::exp(log_sum[k] / count[k])) + " over " +
                             std::to_string(count[k]) + " " + what[k] + (k == 0 ? "," : "")
                       : std::string(" no common ") + what[k] + (k == 0 ? "," : "");
    out << line << "\n";
  }
}

}  // namespace

int RunCompare(int argc, char** argv) {
  CompareOptions o;
  if (!ParseCompareOptions(argc, argv, o)) {
    PrintUsage();
    return 2;
  }
  std::vector<SavedReport> reports(o.files.size());
  for (size_t i = 0; i < o.files.size(); ++i) {
    std::string error;
    if (!LoadReport(o.files[i], reports[i], error)) {
      std::fprintf(stderr, "posenc-report compare: %s: %s\n", o.files[i].c_str(), error.c_str());
      return 2;
    }
  }
  std::ostringstream text;
  PrintTable(reports, text);
  PrintSummary(reports, text);
  std::cout << text.str();
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  const std::string table_path = o.out_dir + "/compare.txt";
  std::ofstream(table_path) << text.str();
  std::cout << "\nTable: " << table_path << "\n";
  if (o.plots) {
    // The plot script reads the files' rows as read here, from a temporary file.
    JsonValue plot = JsonValue::Object();
    JsonValue& files = plot.Set("reports", JsonValue::Array());
    for (const SavedReport& r : reports) files.Push(r.plot);
    const std::string plot_input = o.out_dir + "/compare-plot.json.tmp";
    std::ofstream(plot_input, std::ios::binary | std::ios::trunc) << plot.Dump() << "\n";
    if (RunPlotScript({"compare", o.out_dir, plot_input}, std::cout))
      std::cout << "Plot:  " << o.out_dir << "/compare.png, " << o.out_dir << "/compare.svg\n";
    std::filesystem::remove(plot_input, ec);
  }
  return 0;
}

}  // namespace posenc_report
