#include "graph/lora.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "graph/cost_model.h"
#include "graph/op_schema.h"

namespace remat {
namespace {

constexpr std::string_view kWeightSuffix = ".weight";

// "h.3.attn.c_attn.weight" -> "h.3.attn.c_attn"; empty for names that are not "<module>.weight".
std::string module_of(const std::string& weight) {
  if (!weight.ends_with(kWeightSuffix) || weight.size() == kWeightSuffix.size()) return "";
  return weight.substr(0, weight.size() - kWeightSuffix.size());
}

Op make_op(const Graph& g, OpKind kind, int block, std::vector<TensorId> in,
           std::vector<TensorId> out, OpAttrs attrs) {
  Op o;
  o.kind = kind;
  o.inputs = std::move(in);
  o.outputs = std::move(out);
  o.attrs = std::move(attrs);
  o.block = block;
  estimate_op_work(g, o);
  return o;
}

// Adds the adapter of forward matmul `op_index` (at position `pos` of its block) and routes every
// later reader of the matmul's output to the adapted output.
void add_adapter(Graph& g, int op_index, size_t pos, const std::string& module, float scale,
                 int rank) {
  const Op base = g.ops[static_cast<size_t>(op_index)];
  namespace m = slot::matmul;
  const TensorId x = base.inputs[m::x], w = base.inputs[m::weight], y = base.outputs[m::y];
  // Activations are [rows, features] or [B, T, features]: only the last axis changes.
  const std::vector<int64_t> x_shape = g.tensor(x).shape, y_shape = g.tensor(y).shape;
  const int64_t out = y_shape.back(), in = x_shape.back();
  const DType dt = g.tensor(y).dtype;
  auto param = [&](const std::string& name, std::vector<int64_t> shape) {
    const TensorId id = g.add_tensor(name, std::move(shape), DType::f32, Role::parameter, -1, true);
    g.parameters.push_back(id);
    return id;
  };
  auto act = [&](const std::string& name, int64_t cols) {
    std::vector<int64_t> shape = y_shape;
    shape.back() = cols;
    return g.add_tensor(name, std::move(shape), dt, Role::activation, base.block, false);
  };
  const TensorId a = param(module + ".lora_A.weight", {rank, in});
  const TensorId b = param(module + ".lora_B.weight", {out, rank});
  const TensorId u = act(module + ".lora_A.out", rank);
  const TensorId v = act(module + ".lora_B.out", out);
  const TensorId sum = act(module + ".lora.out", out);
  OpAttrs out_in;
  out_in.w_layout = WeightLayout::out_in;  // PEFT stores A and B as nn.Linear weights
  OpAttrs merge;
  merge.scale = scale;
  std::vector<int> added = {
      g.add_op(make_op(g, OpKind::matmul, base.block, {x, a}, {u}, out_in)),
      g.add_op(make_op(g, OpKind::matmul, base.block, {u, b}, {v}, out_in)),
      g.add_op(make_op(g, OpKind::residual, base.block, {y, v}, {sum}, merge))};
  Block& blk = g.blocks[static_cast<size_t>(base.block)];
  // Readers after the base matmul now read the adapted value; the adapter's own merge keeps y.
  for (size_t i = pos + 1; i < blk.forward_ops.size(); ++i)
    for (TensorId& t : g.ops[static_cast<size_t>(blk.forward_ops[i])].inputs)
      if (t == y) t = sum;
  for (size_t b2 = static_cast<size_t>(base.block) + 1; b2 < g.blocks.size(); ++b2)
    for (int op : g.blocks[b2].forward_ops)
      for (TensorId& t : g.ops[static_cast<size_t>(op)].inputs)
        if (t == y) t = sum;
  if (blk.output == y) blk.output = sum;
  for (Block& later : g.blocks)
    if (later.input == y) later.input = sum;
  if (g.logits == y) g.logits = sum;
  blk.forward_ops.insert(blk.forward_ops.begin() + static_cast<std::ptrdiff_t>(pos) + 1,
                         added.begin(), added.end());
  g.adapters.push_back({module, w, a, b, scale, base.attrs.w_layout == WeightLayout::in_out});
}

// "h.3.attn.c_attn" -> "h.{i}.attn.c_attn": one entry per kind of module in error messages.
std::string module_pattern(const std::string& module) {
  std::string out, part;
  for (size_t i = 0; i <= module.size(); ++i) {
    if (i < module.size() && module[i] != '.') {
      part += module[i];
      continue;
    }
    const bool number = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    out += (out.empty() ? "" : ".") + (number ? std::string("{i}") : part);
    part.clear();
  }
  return out;
}

std::string join(const std::set<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// How many forward ops read each tensor: a weight read twice (GPT-2's tied embedding and head) is
// not a plain linear layer and gets no adapter.
std::map<TensorId, int> forward_readers(const Graph& g) {
  std::map<TensorId, int> n;
  for (const Block& b : g.blocks)
    for (int op : b.forward_ops)
      for (TensorId t : g.ops[static_cast<size_t>(op)].inputs) ++n[t];
  return n;
}

}  // namespace

std::vector<std::string> default_lora_targets(const ModelConfig& model) {
  if (model.arch != Architecture::llama)
    return {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
  // A Qwen3.5 model cut to fewer layers than its attention interval (or built of one kind) lacks
  // a kind's projections: defaults name only what the model has, where a target the user names
  // must match something. A family without its layers (no interval, as a GGUF adapter's
  // arch gives it) has both kinds.
  const bool layers_known = model.qwen35 && model.qwen35_layers.full_attention_interval > 0;
  bool attention = !layers_known, linear = model.qwen35 && !layers_known;
  for (int i = 0; layers_known && i < model.layers; ++i)
    (model.linear_attention_layer(i) ? linear : attention) = true;
  std::vector<std::string> t;
  if (attention) t = {"q_proj", "k_proj", "v_proj", "o_proj"};
  t.insert(t.end(), {"gate_proj", "up_proj", "down_proj"});
  if (linear) t.insert(t.end(), {"in_proj_qkv", "in_proj_z", "out_proj"});
  return t;
}

std::vector<std::string> lora_targets(const LoraSpec& spec, const ModelConfig& model) {
  return spec.targets.empty() ? default_lora_targets(model) : spec.targets;
}

bool lora_target_matches(std::string_view module, const std::vector<std::string>& targets) {
  for (const std::string& t : targets) {
    if (module == t) return true;
    if (module.size() > t.size() && module.ends_with(t) &&
        module[module.size() - t.size() - 1] == '.')
      return true;
  }
  return false;
}

std::vector<std::string> parse_lora_targets(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item(list.substr(start, comma - start));
    if (item.empty())
      throw std::invalid_argument("LoRA targets '" + std::string(list) +
                                  "' have an empty item; give module names separated by commas");
    for (char c : item)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'))
        throw std::invalid_argument("LoRA target '" + item +
                                    "' is not a module name (letters, digits, '_' and '.')");
    out.push_back(item);
    start = comma + 1;
  }
  return out;
}

void apply_lora(Graph& g, const LoraSpec& spec) {
  if (spec.rank < 1)
    throw std::invalid_argument("LoRA rank must be at least 1, got " + std::to_string(spec.rank));
  if (spec.alpha < 0)
    throw std::invalid_argument("LoRA alpha must be positive, got " + std::to_string(spec.alpha));
  if (!g.frozen.empty() || !g.adapters.empty())
    throw std::invalid_argument("the graph already has LoRA adapters");
  if (spec.targets.empty())
    throw std::invalid_argument("LoRA needs target modules (lora_targets gives the defaults)");
  // First find every targeted matmul, so that a target naming nothing leaves the graph as it was.
  std::vector<std::pair<int, std::string>> chosen;  // (op index, module)
  std::set<std::string> used, modules;  // modules: every adaptable one, as a pattern, for errors
  const std::map<TensorId, int> readers = forward_readers(g);
  for (const Block& b : g.blocks)
    for (int op : b.forward_ops) {
      const Op& o = g.ops[static_cast<size_t>(op)];
      if (o.kind != OpKind::matmul) continue;
      const TensorId w = o.inputs[slot::matmul::weight];
      const std::string module = module_of(g.tensor(w).name);
      if (module.empty() || readers.at(w) != 1) continue;
      modules.insert(module_pattern(module));
      for (const std::string& t : spec.targets)
        if (lora_target_matches(module, {t})) used.insert(t);
      if (lora_target_matches(module, spec.targets)) chosen.emplace_back(op, module);
    }
  for (const std::string& t : spec.targets)
    if (!used.count(t))
      throw std::invalid_argument("LoRA target '" + t +
                                  "' names no linear layer of this model; its layers are " +
                                  join(modules));
  g.frozen = std::move(g.parameters);
  g.parameters.clear();
  for (const auto& [op, module] : chosen) {
    std::vector<int>& ops =
        g.blocks[static_cast<size_t>(g.ops[static_cast<size_t>(op)].block)].forward_ops;
    const auto pos = static_cast<size_t>(std::find(ops.begin(), ops.end(), op) - ops.begin());
    add_adapter(g, op, pos, module, spec.scale(), spec.rank);
  }
}

}  // namespace remat
