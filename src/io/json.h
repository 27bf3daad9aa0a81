// A small JSON value, parser and writer: enough for safetensors headers, checkpoint metadata and metrics lines.
// The parser is strict (RFC 8259: no trailing commas, no comments, no NaN), bounds nesting depth, and keeps each
// number's source text so 64-bit integers round-trip exactly (safetensors offsets can exceed 2^53).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace openrnn::io {

class Json {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  Json() = default;
  static Json boolean(bool b);
  static Json number(double v);
  static Json integer(int64_t v);
  static Json string(std::string s);
  static Json array();
  static Json object();

  Type type() const { return type_; }
  bool is_object() const { return type_ == Type::Object; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_string() const { return type_ == Type::String; }
  bool is_number() const { return type_ == Type::Number; }

  // Accessors throw FormatError naming `what` when the type is wrong.
  const std::string& as_string(const char* what = "value") const;
  double as_double(const char* what = "value") const;
  // Exact: the number's text must be a non-negative or negative integer that fits in int64 / uint64.
  int64_t as_int64(const char* what = "value") const;
  uint64_t as_uint64(const char* what = "value") const;
  bool as_bool(const char* what = "value") const;
  const std::vector<Json>& items(const char* what = "value") const;
  // Object members in key order (std::map); duplicate keys are a parse error.
  const std::map<std::string, Json>& members(const char* what = "value") const;

  bool has(const std::string& key) const;
  const Json& at(const std::string& key) const;  // FormatError "missing key" when absent

  void push(Json v);
  void set(const std::string& key, Json v);

  std::string dump() const;  // compact, keys in map order

  // Parses exactly one value spanning all of text (surrounding whitespace allowed). max_depth bounds nesting.
  static Json parse(const std::string& text, int max_depth = 64);

 private:
  friend class JsonParser;
  Type type_ = Type::Null;
  bool bool_ = false;
  double num_ = 0.0;
  std::string str_;  // String: the value; Number: the source text
  std::vector<Json> arr_;
  std::map<std::string, Json> obj_;
};

// JSON string literal of s (with quotes), escaping control characters, quote and backslash.
std::string json_quote(const std::string& s);
// Shortest text that parses back to exactly v ("%.17g"-class, but trimmed); NaN/Inf are written as null.
std::string json_number(double v);

}  // namespace openrnn::io
