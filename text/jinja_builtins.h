// The operators, filters, tests, methods and global functions of remat's Jinja interpreter, each
// as @huggingface/jinja defines it. Failures throw std::invalid_argument with a message the
// evaluator prefixes with the line and column.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja_value.h"

namespace remat::jinja {

struct Arguments {
  List positional;
  std::vector<std::pair<std::string, Value>> keywords;
  // The argument at `index` or named `name`, or undefined.
  Value get(std::size_t index, const char* name) const;
};

Value binary_operation(const std::string& op, const Value& left, const Value& right);
Value item(const Value& object, const Value& key);  // a.b and a[b]
Value slice_of(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
               std::optional<int64_t> step);
Value apply_filter(const std::string& name, const Value& operand, const Arguments& args);
bool apply_test(const std::string& name, const Value& operand);
Value call_method(const Value& object, const std::string& name, const Arguments& args);
Value call_global(const std::string& name, const Arguments& args);  // namespace(), range()

}  // namespace remat::jinja
