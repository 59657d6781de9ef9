// A small JSON value for posenc-report: parses Google Benchmark's JSON files (compare) and
// writes the report's own additions. Objects keep their members in file order.
#ifndef POSENC_TOOLS_REPORT_JSON_H
#define POSENC_TOOLS_REPORT_JSON_H

#include <string>
#include <utility>
#include <vector>

namespace posenc_report {

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  static JsonValue Bool(bool b);
  static JsonValue Number(double x);  // non-finite: written as null
  static JsonValue String(std::string s);
  static JsonValue Array();
  static JsonValue Object();

  Type type() const { return type_; }
  bool IsNumber() const { return type_ == Type::kNumber; }
  bool IsString() const { return type_ == Type::kString; }
  double number() const { return number_; }
  bool boolean() const { return boolean_; }
  const std::string& string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }

  // Appends to an array / an object (member names are not checked for duplicates).
  JsonValue& Push(JsonValue v);
  JsonValue& Set(const std::string& key, JsonValue v);

  // The member `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* Find(const std::string& key) const;
  // The string member `key`, or `fallback` when absent or not a string.
  std::string StringOr(const std::string& key, const std::string& fallback) const;

  // Indented JSON text; `indent` is the indentation of the value's own line.
  std::string Dump(int indent = 0) const;

  // Parses `text` (standard JSON, plus NaN and [-]Infinity as Google Benchmark writes them).
  // Returns false and sets `error` on malformed input.
  static bool Parse(const std::string& text, JsonValue& out, std::string& error);

 private:
  Type type_ = Type::kNull;
  bool boolean_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// A JSON string literal, quotes included.
std::string JsonQuote(const std::string& s);

// Reads a whole file; false if it cannot be read.
bool ReadFile(const std::string& path, std::string& text);

}  // namespace posenc_report

#endif  // POSENC_TOOLS_REPORT_JSON_H
