// A small JSON reader (RFC 8259) for the measured cost table, safetensors headers and tests.
// Hand-written on purpose: remat takes no dependency for a few dozen lines of config. Numbers are
// doubles parsed with std::from_chars (independent of the C locale); \uXXXX escapes, surrogate
// pairs included, become UTF-8; raw control characters inside strings are accepted for files
// written by older remat versions. Errors are std::invalid_argument naming the byte offset.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace remat {

struct JsonValue {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;                   // which of the fields below is meaningful
  bool boolean = false;                     // Type::boolean
  double number = 0;                        // Type::number
  std::string string;                       // Type::string
  std::vector<JsonValue> array;             // Type::array
  std::map<std::string, JsonValue> object;  // Type::object (duplicate keys: last wins)

  // Object member or nullptr.
  const JsonValue* find(const std::string& key) const;
};

JsonValue parse_json(std::string_view text);

}  // namespace remat
