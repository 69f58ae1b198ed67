// GGUF metadata values and their typed getters (formats/gguf.h): how a value is built for the
// writer, named in messages, and converted for callers without loss.
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "formats/gguf.h"

namespace remat {
namespace {

// The GGUF type of a C++ element type.
template <class T>
constexpr GgufValueType value_type_of() {
  if constexpr (std::is_same_v<T, bool>) return GgufValueType::boolean;
  if constexpr (std::is_same_v<T, uint8_t>) return GgufValueType::uint8;
  if constexpr (std::is_same_v<T, int8_t>) return GgufValueType::int8;
  if constexpr (std::is_same_v<T, uint16_t>) return GgufValueType::uint16;
  if constexpr (std::is_same_v<T, int16_t>) return GgufValueType::int16;
  if constexpr (std::is_same_v<T, uint32_t>) return GgufValueType::uint32;
  if constexpr (std::is_same_v<T, int32_t>) return GgufValueType::int32;
  if constexpr (std::is_same_v<T, uint64_t>) return GgufValueType::uint64;
  if constexpr (std::is_same_v<T, int64_t>) return GgufValueType::int64;
  if constexpr (std::is_same_v<T, float>) return GgufValueType::float32;
  if constexpr (std::is_same_v<T, double>) return GgufValueType::float64;
}

template <class T>
void append(std::vector<std::byte>& raw, T value) {
  if constexpr (std::is_same_v<T, bool>) {
    raw.push_back(std::byte{value ? uint8_t{1} : uint8_t{0}});
  } else {
    // Little-endian hosts only (the runtime's targets): the bytes are the file's bytes.
    const std::size_t at = raw.size();
    raw.resize(at + sizeof(T));
    std::memcpy(raw.data() + at, &value, sizeof(T));
  }
}

template <class T>
T load(const std::vector<std::byte>& raw, uint64_t i) {
  T v;
  std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

std::string gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8:
      return "uint8";
    case GgufValueType::int8:
      return "int8";
    case GgufValueType::uint16:
      return "uint16";
    case GgufValueType::int16:
      return "int16";
    case GgufValueType::uint32:
      return "uint32";
    case GgufValueType::int32:
      return "int32";
    case GgufValueType::float32:
      return "float32";
    case GgufValueType::boolean:
      return "bool";
    case GgufValueType::string:
      return "string";
    case GgufValueType::array:
      return "array";
    case GgufValueType::uint64:
      return "uint64";
    case GgufValueType::int64:
      return "int64";
    case GgufValueType::float64:
      return "float64";
  }
  return "type " + std::to_string(static_cast<uint32_t>(t));
}

template <class T>
GgufValue GgufValue::of(T value) {
  GgufValue v;
  v.raw_.clear();
  v.type_ = v.element_ = value_type_of<T>();
  append(v.raw_, value);
  return v;
}

GgufValue GgufValue::of(std::string value) {
  GgufValue v;
  v.raw_.clear();
  v.type_ = v.element_ = GgufValueType::string;
  v.strings_.push_back(std::move(value));
  return v;
}

template <class T>
GgufValue GgufValue::array(const std::vector<T>& values) {
  GgufValue v;
  v.raw_.clear();
  v.type_ = GgufValueType::array;
  v.element_ = value_type_of<T>();
  v.count_ = values.size();
  for (const T x : values) append<T>(v.raw_, x);
  return v;
}

GgufValue GgufValue::array(std::vector<std::string> values) {
  GgufValue v;
  v.raw_.clear();
  v.type_ = GgufValueType::array;
  v.element_ = GgufValueType::string;
  v.count_ = values.size();
  v.strings_ = std::move(values);
  return v;
}

#define REMAT_GGUF_VALUE_TYPE(T)          \
  template GgufValue GgufValue::of<T>(T); \
  template GgufValue GgufValue::array<T>(const std::vector<T>&);
REMAT_GGUF_VALUE_TYPE(uint8_t)
REMAT_GGUF_VALUE_TYPE(int8_t)
REMAT_GGUF_VALUE_TYPE(uint16_t)
REMAT_GGUF_VALUE_TYPE(int16_t)
REMAT_GGUF_VALUE_TYPE(uint32_t)
REMAT_GGUF_VALUE_TYPE(int32_t)
REMAT_GGUF_VALUE_TYPE(uint64_t)
REMAT_GGUF_VALUE_TYPE(int64_t)
REMAT_GGUF_VALUE_TYPE(float)
REMAT_GGUF_VALUE_TYPE(double)
REMAT_GGUF_VALUE_TYPE(bool)
#undef REMAT_GGUF_VALUE_TYPE

uint64_t GgufValue::size() const {
  return count_;
}

std::string GgufValue::type_name() const {
  if (!is_array()) return gguf_value_type_name(type_);
  return "array of " + gguf_value_type_name(element_);
}

std::optional<int64_t> GgufValue::as_int(uint64_t i) const {
  if (i >= count_) return std::nullopt;
  switch (element_) {
    case GgufValueType::uint8:
      return load<uint8_t>(raw_, i);
    case GgufValueType::int8:
      return load<int8_t>(raw_, i);
    case GgufValueType::uint16:
      return load<uint16_t>(raw_, i);
    case GgufValueType::int16:
      return load<int16_t>(raw_, i);
    case GgufValueType::uint32:
      return load<uint32_t>(raw_, i);
    case GgufValueType::int32:
      return load<int32_t>(raw_, i);
    case GgufValueType::int64:
      return load<int64_t>(raw_, i);
    case GgufValueType::uint64: {
      const auto u = load<uint64_t>(raw_, i);
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    default:
      return std::nullopt;
  }
}

std::optional<uint64_t> GgufValue::as_uint(uint64_t i) const {
  if (i >= count_) return std::nullopt;
  if (element_ == GgufValueType::uint64) return load<uint64_t>(raw_, i);
  const auto v = as_int(i);
  if (!v || *v < 0) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

std::optional<double> GgufValue::as_double(uint64_t i) const {
  if (i >= count_) return std::nullopt;
  if (element_ == GgufValueType::float32) return load<float>(raw_, i);
  if (element_ == GgufValueType::float64) return load<double>(raw_, i);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool(uint64_t i) const {
  if (i >= count_ || element_ != GgufValueType::boolean) return std::nullopt;
  return raw_[i] != std::byte{0};
}

const std::string* GgufValue::as_string(uint64_t i) const {
  if (i >= count_ || element_ != GgufValueType::string) return nullptr;
  return &strings_[i];
}

const GgufValue* GgufMetadata::find(std::string_view key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].value;
}

void GgufMetadata::set(const std::string& key, GgufValue value) {
  if (key.empty()) throw std::invalid_argument(origin_ + ": a metadata key cannot be empty");
  const auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].value = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  entries_.push_back({key, std::move(value)});
}

void GgufMetadata::erase(std::string_view key) {
  const auto it = index_.find(key);
  if (it == index_.end()) return;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (std::size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].key, i);
}

void GgufMetadata::mismatch(std::string_view key, const GgufValue& v, const char* want) const {
  throw std::invalid_argument(origin_ + ": key '" + std::string(key) + "' is " + v.type_name() +
                              ", not " + want);
}

std::optional<std::string> GgufMetadata::string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_array() || v->type() != GgufValueType::string) mismatch(key, *v, "a string");
  return v->strings().front();
}

std::optional<uint64_t> GgufMetadata::uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const auto u = v->is_array() ? std::nullopt : v->as_uint();
  if (u) return u;
  const auto negative = v->is_array() ? std::nullopt : v->as_int();
  if (negative)
    throw std::invalid_argument(origin_ + ": key '" + std::string(key) + "' is " +
                                std::to_string(*negative) + ", not an unsigned integer");
  mismatch(key, *v, "an unsigned integer");
}

std::optional<int64_t> GgufMetadata::integer(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const auto i = v->is_array() ? std::nullopt : v->as_int();
  if (!i) mismatch(key, *v, "an integer within int64");
  return i;
}

std::optional<double> GgufMetadata::number(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const auto d = v->is_array() ? std::nullopt : v->as_double();
  if (!d) mismatch(key, *v, "a float32 or float64");
  return d;
}

std::optional<bool> GgufMetadata::boolean(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const auto b = v->is_array() ? std::nullopt : v->as_bool();
  if (!b) mismatch(key, *v, "a bool");
  return b;
}

std::optional<std::vector<std::string>> GgufMetadata::strings(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() || v->element_type() != GgufValueType::string)
    mismatch(key, *v, "an array of string");
  return v->strings();
}

std::optional<std::vector<float>> GgufMetadata::floats(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_array() ||
      (v->element_type() != GgufValueType::float32 && v->element_type() != GgufValueType::float64))
    mismatch(key, *v, "an array of float32 or float64");
  std::vector<float> out(v->size());
  for (uint64_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(*v->as_double(i));
  return out;
}

std::optional<std::vector<int64_t>> GgufMetadata::integers(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const GgufValueType e = v->element_type();
  if (!v->is_array() || e == GgufValueType::float32 || e == GgufValueType::float64 ||
      e == GgufValueType::boolean || e == GgufValueType::string)
    mismatch(key, *v, "an array of integers");
  std::vector<int64_t> out(v->size());
  for (uint64_t i = 0; i < out.size(); ++i) {
    const auto x = v->as_int(i);
    if (!x)
      throw std::invalid_argument(origin_ + ": key '" + std::string(key) + "' element " +
                                  std::to_string(i) + " is " + std::to_string(*v->as_uint(i)) +
                                  ", beyond int64");
    out[i] = *x;
  }
  return out;
}

std::optional<std::vector<int32_t>> GgufMetadata::int32s(std::string_view key) const {
  auto wide = integers(key);
  if (!wide) return std::nullopt;
  std::vector<int32_t> out(wide->size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int64_t x = (*wide)[i];
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
      throw std::invalid_argument(origin_ + ": key '" + std::string(key) + "' element " +
                                  std::to_string(i) + " is " + std::to_string(x) +
                                  ", beyond int32");
    out[i] = static_cast<int32_t>(x);
  }
  return out;
}

}  // namespace remat
