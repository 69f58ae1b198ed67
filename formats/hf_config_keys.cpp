#include "formats/hf_config_keys.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "base/json_writer.h"

namespace remat {

namespace {

void write_value(JsonWriter& w, const JsonValue& v) {
  switch (v.type) {
    case JsonValue::Type::null:
      w.null();
      return;
    case JsonValue::Type::boolean:
      w.value(v.boolean);
      return;
    case JsonValue::Type::number:
      w.value(v.number);
      return;
    case JsonValue::Type::string:
      w.value(v.string);
      return;
    case JsonValue::Type::array:
      w.begin_array();
      for (const JsonValue& e : v.array) write_value(w, e);
      w.end_array();
      return;
    case JsonValue::Type::object:
      w.begin_object();
      for (const auto& [k, e] : v.object) {
        w.key(k);
        write_value(w, e);
      }
      w.end_object();
      return;
  }
}

}  // namespace

std::string json_text(const JsonValue& v) {
  JsonWriter w;
  write_value(w, v);
  return w.str();
}

double shortest_decimal(float f) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, f).ptr;
  double d = 0;
  std::from_chars(buf, end, d);
  return d;
}

void refuse_key(const std::string& key, const JsonValue& value, const std::string& why) {
  throw std::invalid_argument(key + " is " + json_text(value) + "; " + why);
}

const JsonValue* ConfigKeys::given(const std::string& key) const {
  const JsonValue* v = object_.find(key);
  return v && v->type != JsonValue::Type::null ? v : nullptr;
}

std::optional<int> ConfigKeys::positive_int(const std::string& key) const {
  const JsonValue* v = given(key);
  if (!v) return std::nullopt;
  if (v->type != JsonValue::Type::number || v->number < 1 || v->number > 2147483647.0 ||
      v->number != std::floor(v->number))
    refuse(key, "it must be a positive integer");
  return static_cast<int>(v->number);
}

int ConfigKeys::required_int(const std::string& key) const {
  if (auto v = positive_int(key)) return *v;
  throw std::invalid_argument("config.json has no '" + name(key) + "' (a positive integer)");
}

std::optional<double> ConfigKeys::number(const std::string& key) const {
  const JsonValue* v = given(key);
  if (!v) return std::nullopt;
  if (v->type != JsonValue::Type::number || !(v->number > 0)) refuse(key, "it must be above 0");
  return v->number;
}

bool ConfigKeys::boolean(const std::string& key, bool absent) const {
  const JsonValue* v = given(key);
  if (!v) return absent;
  if (v->type != JsonValue::Type::boolean) refuse(key, "it must be true or false");
  return v->boolean;
}

std::string ConfigKeys::string(const std::string& key, const std::string& absent) const {
  const JsonValue* v = given(key);
  if (!v) return absent;
  if (v->type != JsonValue::Type::string) refuse(key, "it must be a string");
  return v->string;
}

void ConfigKeys::require_bool(const std::string& key, bool want, bool absent,
                              const std::string& why) const {
  if (boolean(key, absent) != want) refuse(key, why);
}

void ConfigKeys::refuse(const std::string& key, const std::string& why) const {
  refuse_key(name(key), *object_.find(key), why);
}

}  // namespace remat
