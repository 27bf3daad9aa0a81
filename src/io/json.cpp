#include "json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "io_error.h"

namespace openrnn::io {

namespace {
const char* type_name(Json::Type t) {
  switch (t) {
    case Json::Type::Null: return "null";
    case Json::Type::Bool: return "boolean";
    case Json::Type::Number: return "number";
    case Json::Type::String: return "string";
    case Json::Type::Array: return "array";
    case Json::Type::Object: return "object";
  }
  return "?";
}
[[noreturn]] void wrong_type(const char* what, Json::Type want, Json::Type got) {
  throw FormatError(std::string(what) + " must be a JSON " + type_name(want) + ", found " + type_name(got));
}
}  // namespace

Json Json::boolean(bool b) {
  Json j;
  j.type_ = Type::Bool;
  j.bool_ = b;
  return j;
}
Json Json::number(double v) {
  Json j;
  j.type_ = Type::Number;
  j.num_ = v;
  j.str_ = json_number(v);
  return j;
}
Json Json::integer(int64_t v) {
  Json j;
  j.type_ = Type::Number;
  j.num_ = static_cast<double>(v);
  j.str_ = std::to_string(v);
  return j;
}
Json Json::string(std::string s) {
  Json j;
  j.type_ = Type::String;
  j.str_ = std::move(s);
  return j;
}
Json Json::array() {
  Json j;
  j.type_ = Type::Array;
  return j;
}
Json Json::object() {
  Json j;
  j.type_ = Type::Object;
  return j;
}

const std::string& Json::as_string(const char* what) const {
  if (type_ != Type::String) wrong_type(what, Type::String, type_);
  return str_;
}
double Json::as_double(const char* what) const {
  if (type_ != Type::Number) wrong_type(what, Type::Number, type_);
  return num_;
}
bool Json::as_bool(const char* what) const {
  if (type_ != Type::Bool) wrong_type(what, Type::Bool, type_);
  return bool_;
}
int64_t Json::as_int64(const char* what) const {
  if (type_ != Type::Number) wrong_type(what, Type::Number, type_);
  const char* s = str_.c_str();
  const char* p = s + (*s == '-' ? 1 : 0);
  if (*p == '\0') throw FormatError(std::string(what) + " must be an integer, found " + str_);
  for (const char* q = p; *q; ++q)
    if (*q < '0' || *q > '9') throw FormatError(std::string(what) + " must be an integer, found " + str_);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  if (errno == ERANGE) throw FormatError(std::string(what) + " is out of the 64-bit range: " + str_);
  return static_cast<int64_t>(v);
}
uint64_t Json::as_uint64(const char* what) const {
  if (type_ != Type::Number) wrong_type(what, Type::Number, type_);
  if (str_.empty()) throw FormatError(std::string(what) + " must be an integer");
  for (char c : str_)
    if (c < '0' || c > '9')
      throw FormatError(std::string(what) + " must be a non-negative integer, found " + str_);
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(str_.c_str(), &end, 10);
  if (errno == ERANGE) throw FormatError(std::string(what) + " is out of the 64-bit range: " + str_);
  return static_cast<uint64_t>(v);
}
const std::vector<Json>& Json::items(const char* what) const {
  if (type_ != Type::Array) wrong_type(what, Type::Array, type_);
  return arr_;
}
const std::map<std::string, Json>& Json::members(const char* what) const {
  if (type_ != Type::Object) wrong_type(what, Type::Object, type_);
  return obj_;
}
bool Json::has(const std::string& key) const { return type_ == Type::Object && obj_.count(key) != 0; }
const Json& Json::at(const std::string& key) const {
  if (type_ != Type::Object) wrong_type(("object holding \"" + key + "\"").c_str(), Type::Object, type_);
  auto it = obj_.find(key);
  if (it == obj_.end()) throw FormatError("missing key \"" + key + "\"");
  return it->second;
}
void Json::push(Json v) {
  if (type_ == Type::Null) type_ = Type::Array;
  arr_.push_back(std::move(v));
}
void Json::set(const std::string& key, Json v) {
  if (type_ == Type::Null) type_ = Type::Object;
  obj_[key] = std::move(v);
}

std::string json_quote(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string Json::dump() const {
  switch (type_) {
    case Type::Null: return "null";
    case Type::Bool: return bool_ ? "true" : "false";
    case Type::Number: return str_.empty() ? json_number(num_) : str_;
    case Type::String: return json_quote(str_);
    case Type::Array: {
      std::string s = "[";
      for (size_t i = 0; i < arr_.size(); ++i) s += (i ? "," : "") + arr_[i].dump();
      return s + "]";
    }
    case Type::Object: {
      std::string s = "{";
      bool first = true;
      for (const auto& kv : obj_) {
        s += (first ? "" : ",") + json_quote(kv.first) + ":" + kv.second.dump();
        first = false;
      }
      return s + "}";
    }
  }
  return "null";
}

// Recursive-descent parser over [p, end). Every error names the byte offset.
class JsonParser {
 public:
  JsonParser(const std::string& text, int max_depth)
      : s_(text.data()), p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth) {}

  Json parse_all() {
    Json v = value(0);
    ws();
    if (p_ != end_) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError("JSON: " + what + " at byte " + std::to_string(p_ - s_));
  }
  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool lit(const char* w) {
    const size_t n = std::strlen(w);
    if (static_cast<size_t>(end_ - p_) >= n && std::memcmp(p_, w, n) == 0) {
      p_ += n;
      return true;
    }
    return false;
  }
  Json value(int depth) {
    if (depth > max_depth_) fail("nesting deeper than " + std::to_string(max_depth_));
    ws();
    if (p_ == end_) fail("unexpected end of input");
    const char c = *p_;
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json::string(str());
    if (c == '-' || (c >= '0' && c <= '9')) return num();
    if (lit("true")) return Json::boolean(true);
    if (lit("false")) return Json::boolean(false);
    if (lit("null")) return Json();
    fail(std::string("unexpected character '") + c + "'");
  }
  Json object(int depth) {
    ++p_;
    Json o = Json::object();
    ws();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      return o;
    }
    for (;;) {
      ws();
      if (p_ == end_ || *p_ != '"') fail("expected a string key");
      std::string key = str();
      ws();
      if (p_ == end_ || *p_ != ':') fail("expected ':'");
      ++p_;
      Json v = value(depth + 1);
      if (o.obj_.count(key)) fail("duplicate key \"" + key + "\"");
      o.obj_.emplace(std::move(key), std::move(v));
      ws();
      if (p_ == end_) fail("unterminated object");
      if (*p_ == ',') { ++p_; continue; }
      if (*p_ == '}') { ++p_; return o; }
      fail("expected ',' or '}'");
    }
  }
  Json array(int depth) {
    ++p_;
    Json a = Json::array();
    ws();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      return a;
    }
    for (;;) {
      a.arr_.push_back(value(depth + 1));
      ws();
      if (p_ == end_) fail("unterminated array");
      if (*p_ == ',') { ++p_; continue; }
      if (*p_ == ']') { ++p_; return a; }
      fail("expected ',' or ']'");
    }
  }
  unsigned hex4() {
    if (end_ - p_ < 4) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::string str() {
    ++p_;  // opening quote
    std::string out;
    for (;;) {
      if (p_ == end_) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(*p_++);
      if (c == '"') return out;
      if (c < 0x20) fail("control character inside a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (p_ == end_) fail("unterminated escape");
      const char e = *p_++;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') fail("unpaired surrogate");
            p_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate");
          }
          utf8(out, cp);
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
  }
  Json num() {
    const char* start = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end_) fail("bad number");
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    } else {
      fail("bad number");
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') fail("bad fraction");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') fail("bad exponent");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    Json j;
    j.type_ = Json::Type::Number;
    j.str_.assign(start, p_);
    j.num_ = std::strtod(j.str_.c_str(), nullptr);
    return j;
  }

  const char* s_;
  const char* p_;
  const char* end_;
  int max_depth_;
};

Json Json::parse(const std::string& text, int max_depth) { return JsonParser(text, max_depth).parse_all(); }

}  // namespace openrnn::io
