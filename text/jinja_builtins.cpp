#include "text/jinja_builtins.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace remat::jinja {
namespace {

using VK = Value::Kind;

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument(what);
}

std::string ascii_case(std::string s, bool upper) {
  for (char& c : s)
    c = char(upper ? std::toupper(static_cast<unsigned char>(c))
                   : std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count) {
  std::string out;
  if (from.empty()) fail("replace() of an empty string is not supported");
  std::size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const std::size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out += s.substr(pos, hit - pos) + to;
    pos = hit + from.size();
  }
  return out + s.substr(pos);
}

List split(const std::string& s, const Value& sep, int64_t maxsplit) {
  List out;
  if (sep.kind == VK::undefined || sep.kind == VK::none) {
    std::string rest = trim_start(s);
    while (!rest.empty()) {
      std::size_t end = 0;
      while (end < rest.size() && !space_at(rest, end)) ++end;
      if (maxsplit >= 0 && int64_t(out.size()) >= maxsplit) {
        out.push_back(Value::of(rest));
        break;
      }
      out.push_back(Value::of(rest.substr(0, end)));
      rest = trim_start(std::string_view(rest).substr(end));
    }
    return out;
  }
  if (sep.kind != VK::string) fail("split() separator must be a string");
  if (sep.string.empty()) fail("split() with an empty separator");
  std::size_t pos = 0;
  while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
    const std::size_t hit = s.find(sep.string, pos);
    if (hit == std::string::npos) break;
    out.push_back(Value::of(s.substr(pos, hit - pos)));
    pos = hit + sep.string.size();
  }
  out.push_back(Value::of(s.substr(pos)));
  return out;
}

// Python's str.strip(chars): with no argument JavaScript whitespace, else any of `chars`.
std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  if (chars.kind == VK::undefined || chars.kind == VK::none) {
    std::string r = right ? trim_end(s) : s;
    return left ? trim_start(r) : r;
  }
  if (chars.kind != VK::string) fail("strip() characters must be a string");
  const auto set = code_points(chars.string);
  auto cps = code_points(s);
  std::size_t b = 0, e = cps.size();
  auto in_set = [&](const std::string& c) {
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  while (left && b < e && in_set(cps[b])) ++b;
  while (right && e > b && in_set(cps[e - 1])) --e;
  std::string out;
  for (std::size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

bool starts_or_ends(const std::string& s, const Value& arg, bool start) {
  auto one = [&](const Value& p) {
    if (p.kind != VK::string) fail("startswith()/endswith() take a string or a tuple of strings");
    const std::string& x = p.string;
    return x.size() <= s.size() && (start ? s.compare(0, x.size(), x) == 0
                                          : s.compare(s.size() - x.size(), x.size(), x) == 0);
  };
  if (arg.kind == VK::list) return std::any_of(arg.list->begin(), arg.list->end(), one);
  return one(arg);
}

Value items_of(const Value& d) {
  List out;
  for (const auto& [k, v] : *d.dict) out.push_back(Value::of(List{Value::of(k), v}));
  return Value::of(std::move(out));
}

int64_t length_of(const Value& v) {
  if (v.kind == VK::string) return int64_t(code_points(v.string).size());
  if (v.kind == VK::list) return int64_t(v.list->size());
  if (v.kind == VK::dict) return int64_t(v.dict->size());
  fail(std::string("length of a ") + kind_name(v.kind));
}

int64_t integer_argument(const Value& v, int64_t fallback, const char* what) {
  if (v.kind == VK::undefined || v.kind == VK::none) return fallback;
  if (v.kind != VK::integer) fail(std::string(what) + " must be an integer");
  return v.integer;
}

Value string_method(const std::string& s, const std::string& name, const Arguments& a) {
  if (name == "strip") return Value::of(strip(s, a.get(0, "chars"), true, true));
  if (name == "lstrip") return Value::of(strip(s, a.get(0, "chars"), true, false));
  if (name == "rstrip") return Value::of(strip(s, a.get(0, "chars"), false, true));
  if (name == "upper") return Value::of(ascii_case(s, true));
  if (name == "lower") return Value::of(ascii_case(s, false));
  if (name == "startswith") return Value::of(starts_or_ends(s, a.get(0, "prefix"), true));
  if (name == "endswith") return Value::of(starts_or_ends(s, a.get(0, "suffix"), false));
  if (name == "split")
    return Value::of(
        split(s, a.get(0, "sep"), integer_argument(a.get(1, "maxsplit"), -1, "maxsplit")));
  if (name == "replace") {
    const Value from = a.get(0, "old"), to = a.get(1, "new");
    if (from.kind != VK::string || to.kind != VK::string) fail("replace() takes two strings");
    return Value::of(
        replace_all(s, from.string, to.string, integer_argument(a.get(2, "count"), -1, "count")));
  }
  fail("unsupported string method '" + name + "()'");
}

}  // namespace

Value Arguments::get(std::size_t index, const char* name) const {
  if (index < positional.size()) return positional[index];
  for (const auto& [k, v] : keywords)
    if (k == name) return v;
  return Value();
}

Value binary_operation(const std::string& op, const Value& l, const Value& r) {
  if (op == "==") return Value::of(equal(l, r));
  if (op == "!=") return Value::of(!equal(l, r));
  if (r.kind == VK::undefined && (op == "in" || op == "not in")) return Value::of(op == "not in");
  if (l.kind == VK::undefined || r.kind == VK::undefined)
    fail("'" + op + "' on an undefined value");
  if (l.kind == VK::none || r.kind == VK::none) fail("'" + op + "' on none");
  if (op == "~") return Value::of(to_output(l) + to_output(r));
  if (l.is_number() && r.is_number()) {
    const bool floating = l.kind == VK::floating || r.kind == VK::floating;
    const double a = l.number(), b = r.number();
    auto number = [&](double x) { return floating ? Value::of(x) : Value::of(int64_t(x)); };
    if (op == "+") return floating ? Value::of(a + b) : Value::of(l.integer + r.integer);
    if (op == "-") return floating ? Value::of(a - b) : Value::of(l.integer - r.integer);
    if (op == "*") return floating ? Value::of(a * b) : Value::of(l.integer * r.integer);
    if (op == "/") return Value::of(a / b);
    if (op == "**") {
      if (a == 0 && b < 0) fail("0 cannot be raised to a negative power");
      const double p = std::pow(a, b);
      if (!std::isfinite(p)) fail("'**' result is not a finite real number");
      return floating || b < 0 ? Value::of(p) : Value::of(int64_t(p));
    }
    if ((op == "//" || op == "%") && !floating && r.integer == 0) fail("integer division by zero");
    if (op == "//") return number(std::floor(a / b));
    if (op == "%") return number(std::fmod(a, b));  // JavaScript's %: the sign of the dividend
    if (op == "<") return Value::of(a < b);
    if (op == ">") return Value::of(a > b);
    if (op == "<=") return Value::of(a <= b);
    if (op == ">=") return Value::of(a >= b);
  } else if (l.kind == VK::list && r.kind == VK::list && op == "+") {
    List out = *l.list;
    out.insert(out.end(), r.list->begin(), r.list->end());
    return Value::of(std::move(out));
  } else if (r.kind == VK::list && (op == "in" || op == "not in")) {
    const bool found =
        std::any_of(r.list->begin(), r.list->end(), [&](const Value& x) { return equal(x, l); });
    return Value::of(found != (op == "not in"));
  }
  if ((l.kind == VK::string || r.kind == VK::string) && op == "+")
    return Value::of(to_output(l) + to_output(r));
  if (l.kind == VK::string && r.kind == VK::string && (op == "in" || op == "not in"))
    return Value::of((r.string.find(l.string) != std::string::npos) != (op == "not in"));
  if (l.kind == VK::string && r.kind == VK::dict && (op == "in" || op == "not in"))
    return Value::of((r.find(l.string) != nullptr) != (op == "not in"));
  if (l.kind == VK::string && r.kind == VK::string &&
      (op == "<" || op == ">" || op == "<=" || op == ">=")) {
    const int c = l.string.compare(r.string);
    return Value::of(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
  }
  fail(std::string("unsupported operation: ") + kind_name(l.kind) + " " + op + " " +
       kind_name(r.kind));
}

Value item(const Value& object, const Value& key) {
  if (object.kind == VK::dict || object.kind == VK::names) {
    if (key.kind != VK::string)
      fail(std::string("a dict key must be a string, not a ") + kind_name(key.kind));
    const Value* v = object.find(key.string);
    return v ? *v : Value();
  }
  if ((object.kind == VK::list || object.kind == VK::string) && key.kind == VK::integer) {
    if (object.kind == VK::list) {
      const int64_t n = int64_t(object.list->size());
      const int64_t i = key.integer < 0 ? key.integer + n : key.integer;
      return i >= 0 && i < n ? (*object.list)[std::size_t(i)] : Value();
    }
    const auto cps = code_points(object.string);
    const int64_t n = int64_t(cps.size());
    const int64_t i = key.integer < 0 ? key.integer + n : key.integer;
    return i >= 0 && i < n ? Value::of(cps[std::size_t(i)]) : Value();
  }
  if (key.kind == VK::string && key.string == "length" &&
      (object.kind == VK::list || object.kind == VK::string))
    return Value::of(length_of(object));
  if (key.kind == VK::string || key.kind == VK::integer) return Value();  // undefined, as in Jinja
  fail(std::string("cannot index a ") + kind_name(object.kind) + " with a " + kind_name(key.kind));
}

Value slice_of(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
               std::optional<int64_t> step) {
  List items;
  if (object.kind == VK::list)
    items = *object.list;
  else if (object.kind == VK::string)
    for (auto& c : code_points(object.string)) items.push_back(Value::of(std::move(c)));
  else
    fail(std::string("cannot slice a ") + kind_name(object.kind));
  const int64_t n = int64_t(items.size()), s = step.value_or(1);
  if (s == 0) fail("slice step cannot be zero");
  // Python's slice.indices.
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v < 0 ? *v + n : *v;
    return s > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = clamp(start, s > 0 ? 0 : n - 1), e = clamp(stop, s > 0 ? n : -1);
  List out;
  for (int64_t i = b; s > 0 ? i < e : i > e; i += s) out.push_back(items[std::size_t(i)]);
  if (object.kind == VK::list) return Value::of(std::move(out));
  std::string text;
  for (const auto& c : out) text += c.string;
  return Value::of(std::move(text));
}

Value apply_filter(const std::string& name, const Value& v, const Arguments& a) {
  if (name == "tojson")
    return Value::of(to_json(v, int(integer_argument(a.get(0, "indent"), -1, "indent"))));
  if (name == "string") return Value::of(to_output(v));
  if (name == "default") {
    const Value fallback = a.get(0, "default_value");
    const bool boolean = a.get(1, "boolean").truthy();
    return v.kind == VK::undefined || (boolean && !v.truthy())
               ? (fallback.kind == VK::undefined ? Value::of(std::string()) : fallback)
               : v;
  }
  if (name == "length" || name == "count") return Value::of(length_of(v));
  if (v.kind == VK::string) {
    if (name == "trim") return Value::of(trim(v.string));
    if (name == "upper" || name == "lower") return Value::of(ascii_case(v.string, name == "upper"));
    if (name == "replace") return string_method(v.string, "replace", a);
    if (name == "list") {
      List chars;
      for (auto& c : code_points(v.string)) chars.push_back(Value::of(std::move(c)));
      return Value::of(std::move(chars));
    }
  }
  if (v.kind == VK::list) {
    if (name == "first") return v.list->empty() ? Value() : v.list->front();
    if (name == "last") return v.list->empty() ? Value() : v.list->back();
    if (name == "list") return Value::of(*v.list);
    if (name == "join") {
      Value sep = a.get(0, "d");
      if (sep.kind == VK::undefined) sep = a.get(0, "separator");
      std::string out;
      for (std::size_t i = 0; i < v.list->size(); ++i)
        out += (i ? to_output(sep) : "") + to_output((*v.list)[i]);
      return Value::of(std::move(out));
    }
  }
  if (v.kind == VK::dict && name == "items") return items_of(v);
  fail("unsupported filter '" + name + "' on a " + kind_name(v.kind));
}

bool apply_test(const std::string& name, const Value& v) {
  if (name == "defined") return v.kind != VK::undefined;
  if (name == "undefined") return v.kind == VK::undefined;
  if (name == "none") return v.kind == VK::none;
  if (name == "string") return v.kind == VK::string;
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == VK::integer;
  if (name == "boolean") return v.kind == VK::boolean;
  if (name == "true") return v.kind == VK::boolean && v.boolean;
  if (name == "false") return v.kind == VK::boolean && !v.boolean;
  if (name == "mapping") return v.kind == VK::dict;
  if (name == "sequence" || name == "iterable") return v.kind == VK::list || v.kind == VK::string;
  fail("unsupported test '" + name + "'");
}

Value call_method(const Value& object, const std::string& name, const Arguments& a) {
  if (object.kind == VK::string) return string_method(object.string, name, a);
  if (object.kind == VK::dict) {
    if (name == "items") return items_of(object);
    if (name == "get") {
      const Value key = a.get(0, "key");
      if (key.kind != VK::string) fail("get() takes a string key");
      const Value* found = object.find(key.string);
      const Value fallback = a.get(1, "default");
      return found ? *found : (fallback.kind == VK::undefined ? Value::none() : fallback);
    }
    if (name == "keys" || name == "values") {
      List out;
      for (const auto& [k, v] : *object.dict) out.push_back(name == "keys" ? Value::of(k) : v);
      return Value::of(std::move(out));
    }
  }
  fail("unsupported method '" + name + "()' on a " + kind_name(object.kind));
}

Value call_global(const std::string& name, const Arguments& a) {
  if (name == "namespace") {
    Dict d;
    for (const auto& [k, v] : a.keywords) d.emplace_back(k, v);
    if (!a.positional.empty()) fail("namespace() takes only keyword arguments here");
    return Value::of(std::move(d), VK::names);
  }
  if (name == "range") {
    const int64_t first =
        a.positional.size() > 1 ? integer_argument(a.positional[0], 0, "range start") : 0;
    const int64_t last = integer_argument(
        a.positional.size() > 1 ? a.positional[1] : a.get(0, "stop"), 0, "range stop");
    if (last - first > 10'000'000) fail("range() of more than 10 million numbers");
    List out;
    for (int64_t i = first; i < last; ++i) out.push_back(Value::of(i));
    return Value::of(std::move(out));
  }
  fail("unknown function '" + name + "()'");
}

}  // namespace remat::jinja
