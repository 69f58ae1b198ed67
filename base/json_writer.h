// Writing JSON: string literals with complete escaping, numbers that read back to the same double,
// and a streaming writer so that no caller assembles JSON text by hand.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace remat {

// `utf8` as a quoted JSON string: '"', '\\' and every control character below 0x20 escaped
// (\b \f \n \r \t or \u00XX); valid multi-byte UTF-8 and DEL pass through; each byte that is not
// part of a valid UTF-8 sequence becomes \uFFFD, so the output is always valid JSON text.
std::string json_string(std::string_view utf8);

// The shortest decimal text that reads back as exactly `value` (std::to_chars); integral values up
// to 2^53 print without exponent or point (1073741824). Throws std::invalid_argument on NaN or
// infinity, which JSON cannot represent.
std::string json_number(double value);

// `v` when finite, else nothing (written as null): for measured ratios that may lack a baseline.
inline std::optional<double> if_finite(double v) {
  return v - v == 0 ? std::optional<double>(v) : std::nullopt;
}

// Streaming writer: values are separated and keys placed by the writer itself. With indent > 0 the
// output is pretty-printed with that many spaces per level; with 0 it is compact. Misuse (a value
// where a key is needed, unbalanced end_*) throws std::logic_error.
class JsonWriter {
 public:
  explicit JsonWriter(int indent = 0) : indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool b);
  JsonWriter& value(std::nullptr_t) { return null(); }
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter& value(T v) {
    if constexpr (std::is_signed_v<T>)
      return signed_value(static_cast<std::int64_t>(v));
    else
      return unsigned_value(static_cast<std::uint64_t>(v));
  }
  // An absent value is written as null.
  template <class T>
  JsonWriter& value(const std::optional<T>& v) {
    return v ? value(*v) : null();
  }
  JsonWriter& null();

  // key(k) then value(v).
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  // The text so far; complete once every begin_* has its end_*.
  const std::string& str() const { return out_; }

 private:
  struct Level {
    bool object;
    bool empty = true;
  };
  JsonWriter& signed_value(std::int64_t v);
  JsonWriter& unsigned_value(std::uint64_t v);
  void before_value();
  void open(char c, bool object);
  void close(char c, bool object);
  void newline_indent(std::size_t depth);

  int indent_;
  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace remat
