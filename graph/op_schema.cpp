#include "graph/op_schema.h"

#include <algorithm>

namespace remat {
namespace {

using Presence = OperandSpec::Presence;

// "x, weight, bias?" for error messages.
std::string operand_names(std::span<const OperandSpec> list) {
  std::string s;
  for (const OperandSpec& o : list) {
    if (!s.empty()) s += ", ";
    s += o.name;
    if (o.presence == Presence::if_bias || o.presence == Presence::if_trained ||
        o.presence == Presence::if_trained_bias || o.presence == Presence::if_packed ||
        o.presence == Presence::if_residual || o.presence == Presence::if_chunked)
      s += "?";
    if (o.presence == Presence::variadic) s += "...";
  }
  return s;
}

// Whether an operand of this presence is in the list of an op with these attributes (variadic
// operands count as absent: they add to the minimum nothing).
bool present(Presence p, const OpAttrs& a) {
  switch (p) {
    case Presence::required:
      return true;
    case Presence::if_bias:
      return a.has_bias;
    case Presence::if_trained:
      return !a.frozen;
    case Presence::if_trained_bias:
      return a.has_bias && !a.frozen;
    case Presence::if_packed:
      return a.packed;
    case Presence::if_residual:
      return a.adds_residual;
    case Presence::if_chunked:
      return a.chunk_len > 0;
    case Presence::variadic:
      return false;
  }
  return false;
}

// Empty when `count` operands fit `list`.
std::string check_list(std::span<const OperandSpec> list, const OpAttrs& attrs, std::size_t count,
                       const char* what) {
  std::size_t expected = 0;
  bool variadic = false;
  for (const OperandSpec& o : list) {
    if (present(o.presence, attrs)) ++expected;
    variadic = variadic || o.presence == Presence::variadic;
  }
  if (variadic ? count >= expected : count == expected) return "";
  return std::string("takes ") + (variadic ? "at least " : "") + std::to_string(expected) + " " +
         what + " (" + operand_names(list) + (attrs.has_bias ? "; has_bias" : "") +
         (attrs.frozen ? "; frozen" : "") + (attrs.packed ? "; packed" : "") +
         (attrs.adds_residual ? "; adds_residual" : "") + "), has " + std::to_string(count);
}

// "tokens[BT] u32, wte[V,C]": name, then shape; a variadic list says what it holds in words.
std::string markdown_cell(std::span<const OperandSpec> list) {
  std::string s;
  for (const OperandSpec& o : list) {
    if (!s.empty()) s += ", ";
    s += o.name;
    if (o.presence == Presence::variadic)
      s += "… (" + std::string(o.shape) + ")";
    else
      s += o.shape;
    if (o.presence == Presence::if_bias) s += " (optional)";
    if (o.presence == Presence::if_trained) s += " (unless frozen)";
    if (o.presence == Presence::if_trained_bias) s += " (optional, unless frozen)";
    if (o.presence == Presence::if_packed) s += " (packed rows only)";
    if (o.presence == Presence::if_residual) s += " (fused residual only)";
    if (o.presence == Presence::if_chunked) s += " (chunked only)";
  }
  return s;
}

}  // namespace

std::string check_operand_arity(OpKind kind, const OpAttrs& attrs, std::size_t inputs,
                                std::size_t outputs) {
  const OpSchema& s = op_schema(kind);
  std::string why = check_list(s.inputs, attrs, inputs, "inputs");
  if (why.empty()) why = check_list(s.outputs, attrs, outputs, "outputs");
  return why.empty() ? why : std::string(op_kind_name(kind)) + " " + why;
}

std::vector<TensorId> named_operands(OpKind kind, bool outputs,
                                     std::span<const std::pair<std::string_view, TensorId>> named) {
  const OpSchema& s = op_schema(kind);
  const std::span<const OperandSpec> list = outputs ? s.outputs : s.inputs;
  const std::string where = std::string(op_kind_name(kind)) + (outputs ? " output " : " input ");
  std::vector<TensorId> out(list.size(), kNoTensor);
  for (const auto& [name, id] : named) {
    // A copy: clang before 16 cannot capture a structured binding.
    const std::string_view wanted = name;
    const auto it = std::find_if(list.begin(), list.end(),
                                 [&](const OperandSpec& o) { return o.name == wanted; });
    if (it == list.end()) throw std::logic_error(where + "'" + std::string(name) + "' is unknown");
    TensorId& at = out[static_cast<std::size_t>(it - list.begin())];
    if (at != kNoTensor) throw std::logic_error(where + "'" + std::string(name) + "' given twice");
    at = id;
  }
  // Optional operands that were not given are dropped (the ones after them move up: only a
  // trailing group, or the kinds whose schema says so, may leave one out); a required one missing
  // is a bug.
  std::vector<TensorId> kept;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] != kNoTensor) {
      kept.push_back(out[i]);
    } else if (list[i].presence == Presence::required) {
      throw std::logic_error(where + "'" + std::string(list[i].name) + "' is missing");
    }
  }
  return kept;
}

std::string op_schema_markdown() {
  std::string s = "| kind | inputs | outputs | notes |\n|---|---|---|---|\n";
  for (const OpSchema& k : kOpSchemas)
    s += "| `" + std::string(op_kind_name(k.kind)) + "` | " + markdown_cell(k.inputs) + " | " +
         markdown_cell(k.outputs) + " | " + std::string(k.notes) + " |\n";
  return s;
}

}  // namespace remat
