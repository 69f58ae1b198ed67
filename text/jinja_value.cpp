#include "text/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace remat::jinja {

Value Value::none() {
  Value v;
  v.kind = Kind::none;
  return v;
}

Value Value::of(bool b) {
  Value v;
  v.kind = Kind::boolean;
  v.boolean = b;
  return v;
}

Value Value::of(int64_t i) {
  Value v;
  v.kind = Kind::integer;
  v.integer = i;
  return v;
}

Value Value::of(double d) {
  Value v;
  v.kind = Kind::floating;
  v.floating = d;
  return v;
}

Value Value::of(std::string s) {
  Value v;
  v.kind = Kind::string;
  v.string = std::move(s);
  return v;
}

Value Value::of(List l) {
  Value v;
  v.kind = Kind::list;
  v.list = std::make_shared<List>(std::move(l));
  return v;
}

Value Value::of(Dict d, Kind kind) {
  Value v;
  v.kind = kind;
  v.dict = std::make_shared<Dict>(std::move(d));
  return v;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::undefined:
    case Kind::none:
      return false;
    case Kind::boolean:
      return boolean;
    case Kind::integer:
      return integer != 0;
    case Kind::floating:
      return floating != 0 && !std::isnan(floating);
    case Kind::string:
      return !string.empty();
    case Kind::list:
      return !list->empty();
    case Kind::dict:
      return !dict->empty();
    case Kind::names:
      return true;
  }
  return false;
}

const Value* Value::find(std::string_view key) const {
  if (!dict) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

void Value::assign(const std::string& key, Value v) {
  for (auto& [k, old] : *dict)
    if (k == key) {
      old = std::move(v);
      return;
    }
  dict->emplace_back(key, std::move(v));
}

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::undefined:
      return "undefined";
    case Value::Kind::none:
      return "none";
    case Value::Kind::boolean:
      return "boolean";
    case Value::Kind::integer:
      return "integer";
    case Value::Kind::floating:
      return "float";
    case Value::Kind::string:
      return "string";
    case Value::Kind::list:
      return "list";
    case Value::Kind::dict:
      return "dict";
    case Value::Kind::names:
      return "namespace";
  }
  return "value";
}

namespace {

// JavaScript's Number.prototype.toString: the shortest digits that round-trip, written in
// positional notation for 1e-7 < |x| < 1e21 and in exponent notation (1e+21, 1.5e-7) otherwise.
std::string js_number(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x < 0 ? "-Infinity" : "Infinity";
  if (x == 0) return "0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  std::string sign;
  if (s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  const auto e = s.find('e');
  const int exponent = std::atoi(s.c_str() + e + 1);
  std::string digits = s.substr(0, e);
  if (digits.size() > 1) digits.erase(1, 1);  // the decimal point
  const int n = exponent + 1;                 // digits before the point
  const int k = int(digits.size());
  if (k <= n && n <= 21) return sign + digits + std::string(std::size_t(n - k), '0');
  if (0 < n && n <= 21)
    return sign + digits.substr(0, std::size_t(n)) + "." + digits.substr(std::size_t(n));
  if (-6 < n && n <= 0) return sign + "0." + std::string(std::size_t(-n), '0') + digits;
  std::string mantissa = digits.substr(0, 1);
  if (k > 1) mantissa += "." + digits.substr(1);
  return sign + mantissa + "e" + (n - 1 >= 0 ? "+" : "-") + std::to_string(std::abs(n - 1));
}

std::string float_output(double x) {
  if (x == 0 && std::signbit(x)) return "-0.0";
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e21) return js_number(x) + ".0";
  return js_number(x);
}

// JSON.stringify of a string: the two-character escapes, \u00XX for other control characters,
// everything else (non-ASCII included) as it is.
std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string to_output(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none:
      return "";
    case Value::Kind::boolean:
      return v.boolean ? "true" : "false";
    case Value::Kind::integer:
      return std::to_string(v.integer);
    case Value::Kind::floating:
      return float_output(v.floating);
    case Value::Kind::string:
      return v.string;
    case Value::Kind::list:
    case Value::Kind::dict:
    case Value::Kind::names:
      return to_json(v);
  }
  return "";
}

std::string to_json(const Value& v, int indent, int depth) {
  const std::string item_separator = indent >= 0 ? "," : ", ";
  const std::string pad = indent > 0 ? "\n" + std::string(std::size_t(indent * depth), ' ') : "";
  const std::string child_pad = indent > 0 ? pad + std::string(std::size_t(indent), ' ') : "";
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none:
      return "null";
    case Value::Kind::boolean:
      return v.boolean ? "true" : "false";
    case Value::Kind::integer:
      return std::to_string(v.integer);
    case Value::Kind::floating:
      return std::isfinite(v.floating) ? js_number(v.floating) : "null";
    case Value::Kind::string:
      return json_quote(v.string);
    case Value::Kind::list: {
      if (v.list->empty()) return "[]";
      std::string out = "[";
      for (std::size_t i = 0; i < v.list->size(); ++i)
        out += (i ? item_separator : "") + child_pad + to_json((*v.list)[i], indent, depth + 1);
      return out + pad + "]";
    }
    case Value::Kind::dict:
    case Value::Kind::names: {
      if (v.dict->empty()) return "{}";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, member] : *v.dict) {
        out += (first ? "" : item_separator) + child_pad + json_quote(k) + ": " +
               to_json(member, indent, depth + 1);
        first = false;
      }
      return out + pad + "}";
    }
  }
  return "null";
}

bool equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  const bool a_nothing = a.kind == K::none || a.kind == K::undefined;
  const bool b_nothing = b.kind == K::none || b.kind == K::undefined;
  if (a_nothing || b_nothing) return a_nothing && b_nothing;
  if (a.is_number() && b.is_number()) return a.number() == b.number();
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::boolean:
      return a.boolean == b.boolean;
    case K::string:
      return a.string == b.string;
    case K::list:
      return a.list == b.list;
    default:
      return a.dict == b.dict;
  }
}

namespace {

// Code point at s[i] and its length in bytes; a malformed byte decodes as itself, length 1.
char32_t decode(std::string_view s, std::size_t i, std::size_t& length) {
  const auto c = static_cast<unsigned char>(s[i]);
  length = 1;
  if (c < 0x80) return c;
  const std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  if (n == 1 || i + n > s.size()) return c;
  char32_t cp = c & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return c;
    cp = (cp << 6) | (cc & 0x3F);
  }
  length = n;
  return cp;
}

bool is_js_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000 || c == 0xFEFF;
}

}  // namespace

std::size_t space_at(std::string_view s, std::size_t i) {
  std::size_t length = 0;
  return is_js_space(decode(s, i, length)) ? length : 0;
}

std::string trim_start(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t n = space_at(s, i);
    if (!n) break;
    i += n;
  }
  return std::string(s.substr(i));
}

std::string trim_end(std::string_view s) {
  std::size_t end = 0;  // one past the last byte that is not whitespace
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = space_at(s, i);
    std::size_t length = 0;
    if (!n) {
      decode(s, i, length);
      end = i + length;
    }
    i += n ? n : length;
  }
  return std::string(s.substr(0, end));
}

std::vector<std::string> code_points(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t i = 0, n = 0; i < s.size(); i += n) {
    decode(s, i, n);
    out.emplace_back(s.substr(i, n));
  }
  return out;
}

}  // namespace remat::jinja
