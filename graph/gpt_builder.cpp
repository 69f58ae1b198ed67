#include "graph/gpt_builder.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "graph/cost_model.h"
#include "graph/op_schema.h"

namespace remat {
namespace {

// Emits ops into one block of the graph, naming tensors "<block>.<what>".
class BlockEmitter {
 public:
  BlockEmitter(Graph& g, const TrainShape& shape, int block, uint32_t* dropout_counter)
      : g_(g), shape_(shape), block_(block), dropout_counter_(dropout_counter) {}

  TensorId activation(const std::string& name, std::vector<int64_t> dims, bool fp32 = false) {
    return g_.add_tensor(name, std::move(dims), fp32 ? DType::f32 : shape_.activation_dtype,
                         Role::activation, block_, false);
  }
  TensorId param(const std::string& name, std::vector<int64_t> dims) {
    TensorId id = g_.add_tensor(name, std::move(dims), DType::f32, Role::parameter, -1, true);
    g_.parameters.push_back(id);
    return id;
  }
  using Named = std::initializer_list<std::pair<std::string_view, TensorId>>;
  // Operands by their schema names (graph/op_schema.h), placed in schema order.
  void op(OpKind kind, Named in, Named out, OpAttrs attrs = {}) {
    Op o;
    o.kind = kind;
    o.inputs = named_operands(kind, false, in);
    o.outputs = named_operands(kind, true, out);
    o.attrs = std::move(attrs);
    o.block = block_;
    estimate_op_work(g_, o);
    g_.blocks[static_cast<size_t>(block_)].forward_ops.push_back(g_.add_op(std::move(o)));
  }
  // Returns y = dropout(x), or x itself when p == 0 (the op is omitted, as docs/ops.md says).
  TensorId dropout(TensorId x, const std::string& name) {
    if (shape_.dropout <= 0.0f) return x;
    TensorId y = activation(name, g_.tensor(x).shape);
    OpAttrs a;
    a.dropout_p = shape_.dropout;
    a.dropout_id = (*dropout_counter_)++;
    op(OpKind::dropout, {{"x", x}}, {{"y", y}}, a);
    return y;
  }
  TensorId layernorm(TensorId x, const std::string& prefix, int64_t rows, int64_t c) {
    TensorId w = param(prefix + ".weight", {c});
    TensorId b = param(prefix + ".bias", {c});
    TensorId y = activation(prefix + ".out", {rows, c});
    TensorId mean = activation(prefix + ".mean", {rows}, true);
    TensorId rstd = activation(prefix + ".rstd", {rows}, true);
    op(OpKind::layernorm, {{"x", x}, {"weight", w}, {"bias", b}},
       {{"y", y}, {"mean", mean}, {"rstd", rstd}});
    return y;
  }
  TensorId linear(TensorId x, const std::string& prefix, int64_t rows, int64_t in, int64_t out) {
    TensorId w = param(prefix + ".weight", {in, out});
    TensorId b = param(prefix + ".bias", {out});
    TensorId y = activation(prefix + ".out", {rows, out});
    OpAttrs a;
    a.has_bias = true;
    op(OpKind::matmul, {{"x", x}, {"weight", w}, {"bias", b}}, {{"y", y}}, a);
    return y;
  }

 private:
  Graph& g_;
  const TrainShape& shape_;
  int block_;
  uint32_t* dropout_counter_;
};

int new_block(Graph& g, std::string name, TensorId input) {
  Block b;
  b.name = std::move(name);
  b.input = input;
  g.blocks.push_back(std::move(b));
  return static_cast<int>(g.blocks.size()) - 1;
}

TensorId emit_embedding(Graph& g, const ChainSpec& spec, const TrainShape& s, uint32_t* drop) {
  const int64_t bt = int64_t{s.batch} * s.seq;
  int blk = new_block(g, "embedding", kNoTensor);
  BlockEmitter e(g, s, blk, drop);
  TensorId wte = e.param("wte.weight", {spec.vocab, spec.dim});
  TensorId wpe = e.param("wpe.weight", {spec.ctx, spec.dim});
  TensorId x = e.activation("embedding.out", {bt, spec.dim});
  e.op(OpKind::embedding, {{"tokens", g.tokens}, {"wte", wte}, {"wpe", wpe}}, {{"x", x}});
  return e.dropout(x, "embedding.drop");
}

TensorId emit_block(Graph& g, const ChainSpec& spec, const BlockSpec& b, int index,
                    const TrainShape& s, TensorId x, uint32_t* drop) {
  const int64_t bt = int64_t{s.batch} * s.seq;
  const int64_t c = spec.dim;
  const std::string h = "h." + std::to_string(index);
  int blk = new_block(g, h, x);
  BlockEmitter e(g, s, blk, drop);
  if (b.attention) {
    TensorId ln = e.layernorm(x, h + ".ln_1", bt, c);
    TensorId qkv = e.linear(ln, h + ".attn.c_attn", bt, c, 3 * c);
    TensorId att = e.activation(h + ".attn.out", {bt, c});
    TensorId lse = e.activation(h + ".attn.lse", {s.batch, b.heads, s.seq}, true);
    OpAttrs a;
    a.heads = b.heads;
    e.op(OpKind::attention, {{"qkv", qkv}}, {{"out", att}, {"lse", lse}}, a);
    TensorId proj = e.dropout(e.linear(att, h + ".attn.c_proj", bt, c, c), h + ".attn.drop");
    TensorId sum = e.activation(h + ".attn.residual", {bt, c});
    e.op(OpKind::residual, {{"a", x}, {"b", proj}}, {{"y", sum}});
    x = sum;
  }
  if (b.mlp) {
    TensorId ln = e.layernorm(x, h + ".ln_2", bt, c);
    TensorId fc = e.linear(ln, h + ".mlp.c_fc", bt, c, b.hidden);
    TensorId act = e.activation(h + ".mlp.gelu", {bt, b.hidden});
    e.op(OpKind::gelu, {{"x", fc}}, {{"y", act}});
    TensorId proj = e.dropout(e.linear(act, h + ".mlp.c_proj", bt, b.hidden, c), h + ".mlp.drop");
    TensorId sum = e.activation(h + ".mlp.residual", {bt, c});
    e.op(OpKind::residual, {{"a", x}, {"b", proj}}, {{"y", sum}});
    x = sum;
  }
  return x;
}

void emit_head(Graph& g, const ChainSpec& spec, const TrainShape& s, TensorId x, uint32_t* drop) {
  const int64_t bt = int64_t{s.batch} * s.seq;
  int blk = new_block(g, "head", x);
  BlockEmitter e(g, s, blk, drop);
  TensorId ln = e.layernorm(x, "ln_f", bt, spec.dim);
  TensorId wte = g.parameters.front();  // tied: the head reads the token embedding
  TensorId logits = e.activation("head.logits", {bt, spec.vocab});
  g.logits = logits;
  OpAttrs a;
  a.w_layout = WeightLayout::out_in;
  e.op(OpKind::matmul, {{"x", ln}, {"weight", wte}}, {{"y", logits}}, a);
  e.op(OpKind::cross_entropy, {{"logits", logits}, {"targets", g.targets}}, {{"losses", g.losses}});
}

}  // namespace

Graph build_chain(const ChainSpec& spec, const TrainShape& shape) {
  if (spec.dim <= 0 || spec.vocab <= 0 || spec.ctx <= 0 || shape.batch <= 0 || shape.seq <= 0 ||
      shape.seq > spec.ctx)
    throw std::invalid_argument("chain needs positive dim, vocab, ctx, batch and seq <= ctx");
  for (const BlockSpec& b : spec.blocks)
    if (!b.attention && !b.mlp)
      throw std::invalid_argument("a block needs attention or mlp");
    else if (b.attention && (b.heads <= 0 || spec.dim % b.heads != 0))
      throw std::invalid_argument("block heads must divide dim " + std::to_string(spec.dim));
    else if (b.mlp && b.hidden <= 0)
      throw std::invalid_argument("block MLP width must be positive");
  Graph g;
  g.tokens = g.add_tensor("tokens", {shape.batch, shape.seq}, DType::u32, Role::input, -1, true);
  g.targets = g.add_tensor("targets", {shape.batch, shape.seq}, DType::u32, Role::input, -1, true);
  // The loss is produced by the head's forward but read by the host: persistent, never recomputed.
  g.losses =
      g.add_tensor("losses", {shape.batch, shape.seq}, DType::f32, Role::activation, -1, true);
  uint32_t dropout_counter = 0;
  TensorId x = emit_embedding(g, spec, shape, &dropout_counter);
  for (size_t i = 0; i < spec.blocks.size(); ++i) {
    g.blocks.back().output = x;
    x = emit_block(g, spec, spec.blocks[i], static_cast<int>(i), shape, x, &dropout_counter);
  }
  g.blocks.back().output = x;
  emit_head(g, spec, shape, x, &dropout_counter);
  g.tensors[static_cast<size_t>(g.losses)].block = static_cast<int>(g.blocks.size()) - 1;
  return g;
}

Graph build_gpt(const ModelConfig& config, const TrainShape& shape) {
  config.validate();
  if (config.arch != Architecture::gpt2)
    throw std::invalid_argument("model '" + std::string(config.name()) +
                                "' is of the llama family, which has no graph builder yet");
  shape.validate(config);
  ChainSpec spec;
  spec.dim = config.dim;
  spec.vocab = config.vocab;
  spec.ctx = config.ctx;
  spec.blocks.assign(static_cast<size_t>(config.layers),
                     BlockSpec{true, true, config.heads, 4 * config.dim});
  return build_chain(spec, shape);
}

}  // namespace remat
