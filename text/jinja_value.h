// Values of remat's Jinja interpreter (text/jinja_eval.h). They behave as in Hugging Face's
// @huggingface/jinja, the renderer chat templates are written against: lists, dicts and
// namespaces are shared by reference (so `ns.x = ...` inside a loop is seen after it), `none` and
// undefined print as nothing, booleans print as `true`/`false`, and whitespace is JavaScript's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace remat::jinja {

struct Value;
using List = std::vector<Value>;
// Insertion-ordered, as Python dicts and JavaScript Maps are: `items()` and `tojson` keep the
// order.
using Dict = std::vector<std::pair<std::string, Value>>;

struct Value {
  enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, names };
  Kind kind = Kind::undefined;
  bool boolean = false;
  int64_t integer = 0;
  double floating = 0;
  std::string string;
  std::shared_ptr<List> list;  // Kind::list
  std::shared_ptr<Dict> dict;  // Kind::dict and Kind::names (a namespace())

  static Value none();
  static Value of(bool b);
  static Value of(int64_t i);
  static Value of(double d);
  static Value of(std::string s);
  static Value of(List l);
  static Value of(Dict d, Kind kind = Kind::dict);

  bool is_number() const { return kind == Kind::integer || kind == Kind::floating; }
  double number() const { return kind == Kind::integer ? double(integer) : floating; }
  bool truthy() const;
  // Dict member or nullptr.
  const Value* find(std::string_view key) const;
  void assign(const std::string& key, Value v);  // dicts and namespaces
};

// The name a message uses for a kind: "string", "list", ...
const char* kind_name(Value::Kind kind);
// Text that `{{ v }}` prints.
std::string to_output(const Value& v);
// Like Python's json.dumps with its default separators, without escaping non-ASCII.
std::string to_json(const Value& v, int indent = -1, int depth = 0);
// Loose equality as the reference renderer uses it (1 == 1.0, none == undefined).
bool equal(const Value& a, const Value& b);

// JavaScript's String.prototype.trim/trimStart/trimEnd on UTF-8 (Unicode White_Space and line
// terminators, U+FEFF included).
std::string trim_start(std::string_view s);
std::string trim_end(std::string_view s);
inline std::string trim(std::string_view s) {
  return trim_start(trim_end(s));
}
// Length in bytes of the JavaScript whitespace character that starts at s[i], or 0.
std::size_t space_at(std::string_view s, std::size_t i);
// Code points of a UTF-8 string (a malformed byte counts as one).
std::vector<std::string> code_points(std::string_view s);

}  // namespace remat::jinja
