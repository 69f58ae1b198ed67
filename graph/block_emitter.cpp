#include "graph/block_emitter.h"

#include "graph/cost_model.h"
#include "graph/op_schema.h"
#include "graph/weight_dtype.h"

namespace remat {

int new_block(Graph& g, std::string name, TensorId input) {
  Block b;
  b.name = std::move(name);
  b.input = input;
  g.blocks.push_back(std::move(b));
  return static_cast<int>(g.blocks.size()) - 1;
}

Graph start_chain(const TrainShape& shape) {
  Graph g;
  g.tokens = g.add_tensor("tokens", {shape.batch, shape.seq}, DType::u32, Role::input, -1, true);
  g.targets = g.add_tensor("targets", {shape.batch, shape.seq}, DType::u32, Role::input, -1, true);
  if (shape.packed)
    g.positions =
        g.add_tensor("positions", {shape.batch, shape.seq}, DType::u32, Role::input, -1, true);
  // The loss is produced by the head's forward but read by the host: persistent, never recomputed.
  g.losses =
      g.add_tensor("losses", {shape.batch, shape.seq}, DType::f32, Role::activation, -1, true);
  return g;
}

void finish_chain(Graph& g) {
  g.tensors[static_cast<size_t>(g.losses)].block = static_cast<int>(g.blocks.size()) - 1;
}

TensorId BlockEmitter::activation(const std::string& name, std::vector<int64_t> dims, bool fp32) {
  return g_.add_tensor(name, std::move(dims), fp32 ? DType::f32 : shape_.activation_dtype,
                       Role::activation, block_, false);
}

TensorId BlockEmitter::param(const std::string& name, std::vector<int64_t> dims) {
  TensorId id = g_.add_tensor(name, std::move(dims), DType::f32, Role::parameter, -1, true);
  g_.parameters.push_back(id);
  return id;
}

void BlockEmitter::op(OpKind kind, Named in, Named out, OpAttrs attrs) {
  Op o;
  o.kind = kind;
  // Packed rows: every op that reads positions gets the graph's, so the model builders need not
  // know about packing.
  std::vector<std::pair<std::string_view, TensorId>> inputs(in);
  if (shape_.packed && takes_positions(kind)) {
    attrs.packed = true;
    inputs.emplace_back("positions", g_.positions);
  }
  o.inputs = named_operands(kind, false, inputs);
  o.outputs = named_operands(kind, true, out);
  o.attrs = std::move(attrs);
  o.block = block_;
  estimate_op_work(g_, o);
  g_.blocks[static_cast<size_t>(block_)].forward_ops.push_back(g_.add_op(std::move(o)));
}

TensorId BlockEmitter::dropout(TensorId x, const std::string& name) {
  if (shape_.dropout <= 0.0f) return x;
  TensorId y = activation(name, g_.tensor(x).shape);
  OpAttrs a;
  a.dropout_p = shape_.dropout;
  a.dropout_id = (*dropout_counter_)++;
  op(OpKind::dropout, {{"x", x}}, {{"y", y}}, a);
  return y;
}

TensorId BlockEmitter::layernorm(TensorId x, const std::string& prefix, int64_t rows, int64_t c) {
  TensorId w = param(prefix + ".weight", {c});
  TensorId b = param(prefix + ".bias", {c});
  TensorId y = activation(prefix + ".out", {rows, c});
  TensorId mean = activation(prefix + ".mean", {rows}, true);
  TensorId rstd = activation(prefix + ".rstd", {rows}, true);
  op(OpKind::layernorm, {{"x", x}, {"weight", w}, {"bias", b}},
     {{"y", y}, {"mean", mean}, {"rstd", rstd}});
  return y;
}

TensorId BlockEmitter::conv1d(TensorId x, const std::string& prefix, int64_t rows, int64_t in,
                              int64_t out) {
  // A QLoRA base's Conv1D weight kept in its GGUF blocks is held as the file's rows, [out, in].
  const bool out_in = conv1d_held_out_in(shape_, prefix + ".weight");
  TensorId w = param(prefix + ".weight", out_in ? std::vector{out, in} : std::vector{in, out});
  TensorId b = param(prefix + ".bias", {out});
  TensorId y = activation(prefix + ".out", {rows, out});
  OpAttrs a;
  a.has_bias = true;
  if (out_in) a.w_layout = WeightLayout::out_in;
  op(OpKind::matmul, {{"x", x}, {"weight", w}, {"bias", b}}, {{"y", y}}, a);
  return y;
}

TensorId BlockEmitter::linear(TensorId x, const std::string& prefix, std::vector<int64_t> out_dims,
                              int64_t in, bool bias) {
  const int64_t out = out_dims.back();
  TensorId w = param(prefix + ".weight", {out, in});
  TensorId b = bias ? param(prefix + ".bias", {out}) : kNoTensor;
  TensorId y = activation(prefix + ".out", std::move(out_dims));
  OpAttrs a;
  a.w_layout = WeightLayout::out_in;
  a.has_bias = bias;
  if (bias)
    op(OpKind::matmul, {{"x", x}, {"weight", w}, {"bias", b}}, {{"y", y}}, a);
  else
    op(OpKind::matmul, {{"x", x}, {"weight", w}}, {{"y", y}}, a);
  return y;
}

}  // namespace remat
