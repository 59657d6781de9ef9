#include "report_record.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "report_rates.h"

namespace posenc_report {
namespace {

const char* SourceName(posenc_isa_source source) {
  switch (source) {
    case POSENC_ISA_SOURCE_AUTO:
      return "auto";
    case POSENC_ISA_SOURCE_ENV:
      return "POSENC_ISA";
    case POSENC_ISA_SOURCE_ENV_FALLBACK:
      return "POSENC_ISA fallback";
    case POSENC_ISA_SOURCE_API:
      return "posenc_set_isa";
  }
  return "unknown";
}

JsonValue IsaList(int (*has)(posenc_isa)) {
  JsonValue list = JsonValue::Array();
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (has(static_cast<posenc_isa>(i)))
      list.Push(JsonValue::String(posenc_isa_name(static_cast<posenc_isa>(i))));
  return list;
}

JsonValue IsaJson(const IsaChoice& choice) {
  JsonValue isa = JsonValue::Object();
  isa.Set("compiled", IsaList(posenc_isa_compiled));
  isa.Set("available", IsaList(posenc_isa_available));
  isa.Set("active", JsonValue::String(posenc_isa_name(choice.active)));
  isa.Set("chosen_by", JsonValue::String(SourceName(choice.source)));
  if (const char* env = std::getenv("POSENC_ISA")) isa.Set("POSENC_ISA", JsonValue::String(env));
  JsonValue kernels = JsonValue::Object();
  for (size_t k = 0; k < choice.kernels.size(); ++k)
    kernels.Set(posenc_kernel_name(static_cast<posenc_kernel>(k)),
                JsonValue::String(posenc_isa_name(static_cast<posenc_isa>(choice.kernels[k]))));
  isa.Set("kernels", kernels);
  return isa;
}

JsonValue CachesJson() {
  JsonValue caches = JsonValue::Array();
  for (const auto& c : benchmark::CPUInfo::Get().caches) {
    JsonValue& cache = caches.Push(JsonValue::Object());
    cache.Set("type", JsonValue::String(c.type));
    cache.Set("level", JsonValue::Number(c.level));
    cache.Set("size", JsonValue::Number(c.size));
    cache.Set("num_sharing", JsonValue::Number(c.num_sharing));
  }
  return caches;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Column names of a table header: separated by two or more spaces ("cos/sin err" is one);
// a "bound" column is named after the column it bounds ("cos/sin err bound").
std::vector<std::string> HeaderColumns(const std::string& line) {
  std::vector<std::string> columns;
  size_t i = line.find_first_not_of(' ');
  while (i != std::string::npos) {
    size_t end = line.find("  ", i);
    if (end == std::string::npos) end = line.size();
    std::string name = line.substr(i, end - i);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (name == "bound" && !columns.empty()) name = columns.back() + " bound";
    columns.push_back(name);
    i = line.find_first_not_of(' ', end);
  }
  return columns;
}

JsonValue Cell(const std::string& word) {
  char* end = nullptr;
  const double x = std::strtod(word.c_str(), &end);
  if (end != word.c_str() && *end == '\0') return JsonValue::Number(x);
  return JsonValue::String(word);
}

bool IsIsaName(const std::string& word) {
  posenc_isa isa;
  return posenc_isa_from_name(word.c_str(), &isa) == POSENC_OK;
}

// "  RoPE err: 10000 random calls ..." -> "RoPE"; "  Sinusoidal, ALiBi, learned: ..." ->
// "Sinusoidal, ALiBi, learned".
// Only a line indented by two spaces opens a title, not a note "  (untouched: ...)".
std::string TitleOf(const std::string& line) {
  const size_t start = 2;
  const size_t colon = line.find(':');
  if (line.size() <= start || line.compare(0, start, "  ") != 0 || line[start] == ' ' ||
      line[start] == '(' || colon == std::string::npos)
    return "";
  std::string title = line.substr(start, colon - start);
  const std::string suffix = " err";
  if (title.size() > suffix.size() && title.compare(title.size() - suffix.size(), 4, suffix) == 0)
    title.resize(title.size() - suffix.size());
  return title;
}

}  // namespace

IsaChoice CurrentIsaChoice() {
  IsaChoice c;
  c.active = posenc_active_isa();
  c.source = posenc_isa_selection(&c.requested);
  for (int k = 0; k < POSENC_KERNEL_COUNT; ++k)
    c.kernels.push_back(posenc_kernel_isa(static_cast<posenc_kernel>(k)));
  return c;
}

JsonValue CpuDescriptionJson(const IsaChoice& isa) {
  const benchmark::CPUInfo& info = benchmark::CPUInfo::Get();
  JsonValue cpu = JsonValue::Object();
  cpu.Set("posenc_version", JsonValue::String(posenc_version()));
  cpu.Set("model", JsonValue::String(posenc_cpu_name()));
  cpu.Set("features", JsonValue::String(posenc_cpu_features()));
  if (const unsigned bits = posenc_cpu_sve_vector_bits())
    cpu.Set("sve_vector_bits", JsonValue::Number(bits));
  cpu.Set("isa", IsaJson(isa));
  cpu.Set("logical_cpus", JsonValue::Number(info.num_cpus));
  cpu.Set("hardware_threads", JsonValue::Number(std::thread::hardware_concurrency()));
  cpu.Set("mhz", JsonValue::Number(info.cycles_per_second / 1e6));
  cpu.Set("caches", CachesJson());
  return cpu;
}

JsonValue SelfCheckJson(uint64_t seed, bool pass, const std::string& text) {
  JsonValue check = JsonValue::Object();
  check.Set("seed", JsonValue::Number(static_cast<double>(seed)));
  check.Set("result", JsonValue::String(pass ? "PASS" : "FAIL"));
  JsonValue tables = JsonValue::Array();
  JsonValue per_isa = JsonValue::Object();  // PASS unless a row of that ISA failed
  std::map<std::string, bool> isa_pass;
  std::vector<std::string> isa_order;
  const std::vector<std::string> lines = Lines(text);
  std::string title;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::vector<std::string> words = Words(lines[i]);
    if (words.empty() || words[0] != "isa") {
      if (title.empty()) title = TitleOf(lines[i]);
      continue;
    }
    const std::vector<std::string> columns = HeaderColumns(lines[i]);
    JsonValue& table = tables.Push(JsonValue::Object());
    table.Set("title", JsonValue::String(title));
    JsonValue& rows = table.Set("rows", JsonValue::Array());
    for (; i + 1 < lines.size(); ++i) {
      const std::vector<std::string> cells = Words(lines[i + 1]);
      if (cells.size() != columns.size() || !IsIsaName(cells[0])) break;
      JsonValue& row = rows.Push(JsonValue::Object());
      for (size_t c = 0; c < cells.size(); ++c)
        row.Set(columns[c], c == 0 ? JsonValue::String(cells[0]) : Cell(cells[c]));
      const auto [it, first_row] = isa_pass.emplace(cells[0], true);
      if (first_row) isa_order.push_back(cells[0]);
      it->second = it->second && cells.back() == "PASS";
    }
    title.clear();
  }
  for (const std::string& isa : isa_order)
    per_isa.Set(isa, JsonValue::String(isa_pass[isa] ? "PASS" : "FAIL"));
  check.Set("per_isa", per_isa);
  check.Set("tables", tables);
  JsonValue text_lines = JsonValue::Array();
  for (const std::string& line : lines) text_lines.Push(JsonValue::String(line));
  check.Set("text", text_lines);
  return check;
}

bool WriteReportJson(const std::string& benchmark_json_path, JsonValue posenc,
                     const std::string& path, std::string& error) {
  std::string text;
  if (!ReadFile(benchmark_json_path, text)) {
    error = "cannot read " + benchmark_json_path;
    return false;
  }
  text = WithoutRepeats(std::move(text));
  JsonValue parsed;
  const size_t brace = text.find('{');
  const JsonValue* benchmarks = nullptr;
  if (!JsonValue::Parse(text, parsed, error) || brace == std::string::npos ||
      !(benchmarks = parsed.Find("benchmarks"))) {
    error = "Google Benchmark's JSON " + benchmark_json_path + ": " +
            (error.empty() ? "no \"benchmarks\"" : error);
    return false;
  }
  RowRates rates = MedianRates(*benchmarks);
  const JsonValue* paired = posenc.Find("paired");
  if (const JsonValue* rows = paired ? paired->Find("rows") : nullptr) AddPairedRates(*rows, rates);
  posenc.Set("bytes_per_second", RatesJson(rates));
  const std::string combined = text.substr(0, brace + 1) + "\n  \"posenc\": " + posenc.Dump(2) +
                               "," + text.substr(brace + 1);
  if (!JsonValue::Parse(combined, parsed, error)) {
    error = "internal: combined JSON does not parse: " + error;
    return false;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << combined;
  out.close();
  if (!out) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace posenc_report
