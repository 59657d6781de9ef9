#include "report_rates.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

namespace posenc_report {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(at);
  return i + 1 < v.size() ? v[i] + (at - static_cast<double>(i)) * (v[i + 1] - v[i]) : v[i];
}

namespace {

double NumberOr(const JsonValue& object, const std::string& key, double fallback) {
  const JsonValue* v = object.Find(key);
  return v && v->IsNumber() ? v->number() : fallback;
}

double TimeUnitSeconds(const std::string& unit) {
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1.0;
  return 1e-9;  // "ns", and anything unknown
}

}  // namespace

std::string WithoutRepeats(std::string text) {
  static const char kMark[] = "/repeats:";
  for (size_t at = text.find(kMark); at != std::string::npos; at = text.find(kMark, at)) {
    size_t end = at + sizeof kMark - 1;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end > at + sizeof kMark - 1)
      text.erase(at, end - at);
    else
      at = end;
  }
  return text;
}

bool IsLimitRow(const std::string& name) { return name.rfind("limit_", 0) == 0; }

unsigned long long LimitRowBytes(const std::string& name) {
  const size_t colon = name.rfind(':');
  return colon == std::string::npos ? 0 : std::strtoull(name.c_str() + colon + 1, nullptr, 10);
}

RowRates MedianRates(const JsonValue& benchmarks) {
  RowRates r;
  std::vector<std::pair<std::string, double>> medians;
  std::map<std::string, std::vector<double>> runs;
  for (const JsonValue& b : benchmarks.items()) {
    const JsonValue* bytes = b.Find("bytes_per_second");
    const JsonValue* error = b.Find("error_occurred");
    if (!bytes || !bytes->IsNumber() || (error && error->boolean())) continue;
    const std::string name = b.StringOr("run_name", b.StringOr("name", ""));
    const std::string type = b.StringOr("run_type", "iteration");
    if (type == "aggregate" && b.StringOr("aggregate_name", "") == "median") {
      medians.emplace_back(name, bytes->number());
    } else if (type == "iteration") {
      std::vector<double>& values = runs[name];
      if (values.empty()) r.names.push_back(name);
      values.push_back(bytes->number());
      r.buffer_estimate[name] = 4 * NumberOr(b, "items_per_second", 0) *
                                NumberOr(b, "real_time", 0) *
                                TimeUnitSeconds(b.StringOr("time_unit", "ns"));
    }
  }
  for (const auto& [name, values] : runs) r.bytes_per_second[name] = Median(values);
  for (const auto& [name, rate] : medians) {
    if (!runs.count(name) && !r.bytes_per_second.count(name)) r.names.push_back(name);
    r.bytes_per_second[name] = rate;
  }
  return r;
}

void AddPairedRates(const JsonValue& paired_rows, RowRates& rates) {
  for (const auto& [name, row] : paired_rows.members()) {
    const JsonValue* bytes = row.Find("bytes_per_second");
    if (!bytes || !bytes->IsNumber()) continue;
    if (!rates.bytes_per_second.count(name)) rates.names.push_back(name);
    rates.bytes_per_second[name] = bytes->number();
  }
}

JsonValue RatesJson(const RowRates& rates) {
  JsonValue json = JsonValue::Object();
  for (const std::string& name : rates.names)
    json.Set(name, JsonValue::Number(rates.bytes_per_second.at(name)));
  return json;
}

namespace {

// The limit a kernel is compared with: limit_copy for the out-of-place rows, limit_write for
// table fills, else limit_rmw; nullptr for rows that have none (the decode and cold rows).
const char* LimitKindOf(const std::string& kernel) {
  if (kernel.rfind("rope_decode_layers", 0) == 0 || kernel.rfind("rope_cold_layer", 0) == 0)
    return nullptr;
  if (kernel.rfind("rope_out", 0) == 0 || kernel.rfind("copy_then_rope", 0) == 0 ||
      kernel.rfind("softmax_out", 0) == 0)
    return "limit_copy";
  return kernel.find("_fill") != std::string::npos ? "limit_write" : "limit_rmw";
}

}  // namespace

JsonValue EstimatedRowGroupsJson(const RowRates& rates) {
  std::map<std::string, std::set<double>> limit_sizes;  // per kind ("limit_rmw"), and "" all
  for (const std::string& name : rates.names)
    if (IsLimitRow(name))
      for (const std::string& kind : {name.substr(0, name.find('/')), std::string()})
        limit_sizes[kind].insert(static_cast<double>(LimitRowBytes(name)));
  JsonValue groups = JsonValue::Array();
  std::set<std::pair<std::string, std::string>> seen;
  for (const std::string& name : rates.names) {
    const size_t a = name.find('/');
    const size_t b = a == std::string::npos ? a : name.find('/', a + 1);
    if (IsLimitRow(name) || b == std::string::npos) continue;
    const std::string kernel = name.substr(0, a), shape = name.substr(b + 1);
    const char* kind = LimitKindOf(kernel);
    if (!kind || !seen.emplace(kernel, shape).second) continue;
    const auto estimate_it = rates.buffer_estimate.find(name);
    double estimate = estimate_it == rates.buffer_estimate.end() ? 0 : estimate_it->second;
    // A copy's n is its source and destination: twice the f32 estimate for f32 -> f32.
    if (!std::strcmp(kind, "limit_copy")) estimate *= 2;
    const std::set<double>& sizes = limit_sizes.count(kind) ? limit_sizes[kind] : limit_sizes[""];
    if (!sizes.empty() && estimate > 0) {
      double nearest = *sizes.begin();  // the first of equally near sizes: the smaller
      for (double size : sizes)
        if (std::fabs(std::log(size / estimate)) < std::fabs(std::log(nearest / estimate)))
          nearest = size;
      estimate = nearest;
    }
    if (!(estimate > 0)) continue;
    JsonValue& group = groups.Push(JsonValue::Object());
    group.Set("kernel", JsonValue::String(kernel));
    group.Set("shape", JsonValue::String(shape));
    group.Set("buffer_bytes", JsonValue::Number(estimate));
    group.Set("limit", JsonValue::String(std::string(kind) + "/bytes:" +
                                         std::to_string(static_cast<long long>(estimate))));
  }
  return groups;
}

}  // namespace posenc_report
