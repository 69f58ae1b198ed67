// Typed reading of one config.json object (or of an object inside one, such as rope_parameters),
// where every value remat cannot take is refused in one line naming the key and its value.
// Shared by the families' mapping (formats/hf_config.h) and the RoPE keys (formats/hf_rope.h).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "base/json.h"

namespace remat {

// A JSON value as compact text, for error messages ({"factor":2,"rope_type":"linear"}).
std::string json_text(const JsonValue& v);

// The float's shortest decimal as a double, for writing config.json (1e-5f is written 1e-05, not
// 9.99999974737875e-06).
double shortest_decimal(float f);

// std::invalid_argument "<key> is <value as JSON>; <why>".
[[noreturn]] void refuse_key(const std::string& key, const JsonValue& value,
                             const std::string& why);

// The keys of one object. An absent key and a null value both mean "not given". `prefix` names
// the object in messages ("rope_parameters.full_attention" gives
// "rope_parameters.full_attention.factor is ..."); empty for config.json itself.
class ConfigKeys {
 public:
  explicit ConfigKeys(const JsonValue& object, std::string prefix = "")
      : object_(object), prefix_(std::move(prefix)) {}

  const std::string& prefix() const { return prefix_; }
  // The key as messages spell it, prefix included.
  std::string name(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  const JsonValue& object() const { return object_; }
  const JsonValue* given(const std::string& key) const;
  std::optional<int> positive_int(const std::string& key) const;
  int required_int(const std::string& key) const;
  // A number above 0.
  std::optional<double> number(const std::string& key) const;
  bool boolean(const std::string& key, bool absent) const;
  std::string string(const std::string& key, const std::string& absent) const;
  // Refuses `key` unless it is absent or equal to `want`.
  void require_bool(const std::string& key, bool want, bool absent, const std::string& why) const;
  // Refuses `key` as refuse_key does, under its full name.
  [[noreturn]] void refuse(const std::string& key, const std::string& why) const;

 private:
  const JsonValue& object_;
  std::string prefix_;
};

}  // namespace remat
