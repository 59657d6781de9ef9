#include "report_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace posenc_report {
namespace {

constexpr int kMaxDepth = 64;

bool IsOneOf(char c, const char* set) { return c != '\0' && std::strchr(set, c) != nullptr; }

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool ParseDocument(JsonValue& out, std::string& error) {
    bool ok = ParseValue(out, 0);
    SkipSpace();
    if (ok && pos_ != s_.size()) ok = Fail("trailing data");
    if (!ok) error = error_ + " at offset " + std::to_string(pos_);
    return ok;
  }

 private:
  bool Fail(const char* why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && IsOneOf(s_[pos_], " \t\r\n")) ++pos_;
  }
  bool Consume(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  bool ParseValue(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return Fail("nesting too deep");
    SkipSpace();
    if (pos_ >= s_.size()) return Fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return ParseObject(out, depth);
    if (c == '[') return ParseArray(out, depth);
    if (c == '"') {
      std::string str;
      if (!ParseString(str)) return false;
      out = JsonValue::String(std::move(str));
      return true;
    }
    if (Consume("true")) return out = JsonValue::Bool(true), true;
    if (Consume("false")) return out = JsonValue::Bool(false), true;
    if (Consume("null")) return out = JsonValue(), true;
    return ParseNumber(out);
  }

  bool ParseNumber(JsonValue& out) {
    const bool negative = s_[pos_] == '-';
    if (Consume(negative ? "-NaN" : "NaN") || Consume(negative ? "-nan" : "nan"))
      return out = JsonValue::Number(NAN), true;
    if (Consume(negative ? "-Infinity" : "Infinity"))
      return out = JsonValue::Number(negative ? -INFINITY : INFINITY), true;
    const size_t start = pos_;
    while (pos_ < s_.size() && IsOneOf(s_[pos_], "+-0123456789.eE")) ++pos_;
    if (pos_ == start) return Fail("unexpected character");
    const std::string token = s_.substr(start, pos_ - start);
    char* end = nullptr;
    const double x = std::strtod(token.c_str(), &end);
    if (*end != '\0') return Fail("malformed number");
    out = JsonValue::Number(x);
    return true;
  }

  static void AppendUtf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  bool ParseHex4(unsigned& code) {
    if (pos_ + 4 > s_.size()) return Fail("short \\u escape");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= static_cast<unsigned>(h - 'A' + 10);
      else
        return Fail("bad \\u escape");
    }
    return true;
  }

  bool ParseEscape(std::string& out) {
    const char e = s_[pos_++];
    static const char kFrom[] = "\"\\/bfnrt";
    static const char kTo[] = "\"\\/\b\f\n\r\t";
    if (const char* p = std::strchr(kFrom, e); p && e != '\0') {
      out += kTo[p - kFrom];
      return true;
    }
    if (e != 'u') return Fail("bad escape");
    unsigned code;
    if (!ParseHex4(code)) return false;
    if (code >= 0xD800 && code < 0xDC00 && Consume("\\u")) {
      unsigned low;
      if (!ParseHex4(low)) return false;
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(out, code);
    return true;
  }

  bool ParseString(std::string& out) {
    ++pos_;  // the opening quote
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
      } else if (pos_ >= s_.size() || !ParseEscape(out)) {
        return Fail("bad escape");
      }
    }
    return Fail("unterminated string");
  }

  bool ParseArray(JsonValue& out, int depth) {
    ++pos_;
    out = JsonValue::Array();
    SkipSpace();
    if (Consume("]")) return true;
    for (;;) {
      JsonValue item;
      if (!ParseValue(item, depth + 1)) return false;
      out.Push(std::move(item));
      SkipSpace();
      if (Consume("]")) return true;
      if (!Consume(",")) return Fail("expected ',' or ']'");
    }
  }

  bool ParseObject(JsonValue& out, int depth) {
    ++pos_;
    out = JsonValue::Object();
    SkipSpace();
    if (Consume("}")) return true;
    for (;;) {
      SkipSpace();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a member name");
      if (!ParseString(key)) return false;
      SkipSpace();
      if (!Consume(":")) return Fail("expected ':'");
      JsonValue value;
      if (!ParseValue(value, depth + 1)) return false;
      out.Set(key, std::move(value));
      SkipSpace();
      if (Consume("}")) return true;
      if (!Consume(",")) return Fail("expected ',' or '}'");
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

// The shortest of %.15g, %.16g, %.17g that reads back as x (9.54e-07, not 9.540000000000001e-07).
std::string NumberText(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[40];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

}  // namespace

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.boolean_ = b;
  return v;
}

JsonValue JsonValue::Number(double x) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = x;
  return v;
}

JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

JsonValue JsonValue::Array() {
  JsonValue v;
  v.type_ = Type::kArray;
  return v;
}

JsonValue JsonValue::Object() {
  JsonValue v;
  v.type_ = Type::kObject;
  return v;
}

JsonValue& JsonValue::Push(JsonValue v) {
  items_.push_back(std::move(v));
  return items_.back();
}

JsonValue& JsonValue::Set(const std::string& key, JsonValue v) {
  members_.emplace_back(key, std::move(v));
  return members_.back().second;
}

const JsonValue* JsonValue::Find(const std::string& key) const {
  for (const auto& [name, value] : members_)
    if (name == key) return &value;
  return nullptr;
}

std::string JsonValue::StringOr(const std::string& key, const std::string& fallback) const {
  const JsonValue* v = Find(key);
  return v && v->IsString() ? v->string() : fallback;
}

std::string JsonValue::Dump(int indent) const {
  const std::string inner(static_cast<size_t>(indent + 2), ' ');
  const std::string outer(static_cast<size_t>(indent), ' ');
  switch (type_) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return boolean_ ? "true" : "false";
    case Type::kNumber:
      return NumberText(number_);
    case Type::kString:
      return JsonQuote(string_);
    case Type::kArray: {
      if (items_.empty()) return "[]";
      std::string s = "[\n";
      for (size_t i = 0; i < items_.size(); ++i)
        s += inner + items_[i].Dump(indent + 2) + (i + 1 < items_.size() ? ",\n" : "\n");
      return s + outer + "]";
    }
    case Type::kObject: {
      if (members_.empty()) return "{}";
      std::string s = "{\n";
      for (size_t i = 0; i < members_.size(); ++i)
        s += inner + JsonQuote(members_[i].first) + ": " + members_[i].second.Dump(indent + 2) +
             (i + 1 < members_.size() ? ",\n" : "\n");
      return s + outer + "}";
    }
  }
  return "null";
}

bool JsonValue::Parse(const std::string& text, JsonValue& out, std::string& error) {
  return Parser(text).ParseDocument(out, error);
}

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

bool ReadFile(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buf;
  buf << in.rdbuf();
  text = buf.str();
  return !in.bad();
}

}  // namespace posenc_report
