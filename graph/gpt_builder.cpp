#include "graph/gpt_builder.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "graph/block_emitter.h"

namespace remat {
namespace {

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
    TensorId qkv = e.conv1d(ln, h + ".attn.c_attn", bt, c, 3 * c);
    TensorId att = e.activation(h + ".attn.out", {bt, c});
    TensorId lse = e.activation(h + ".attn.lse", {s.batch, b.heads, s.seq}, true);
    OpAttrs a;
    a.heads = b.heads;
    e.op(OpKind::attention, {{"qkv", qkv}}, {{"out", att}, {"lse", lse}}, a);
    TensorId proj = e.dropout(e.conv1d(att, h + ".attn.c_proj", bt, c, c), h + ".attn.drop");
    TensorId sum = e.activation(h + ".attn.residual", {bt, c});
    e.op(OpKind::residual, {{"a", x}, {"b", proj}}, {{"y", sum}});
    x = sum;
  }
  if (b.mlp) {
    TensorId ln = e.layernorm(x, h + ".ln_2", bt, c);
    TensorId fc = e.conv1d(ln, h + ".mlp.c_fc", bt, c, b.hidden);
    TensorId act = e.activation(h + ".mlp.gelu", {bt, b.hidden});
    e.op(OpKind::gelu, {{"x", fc}}, {{"y", act}});
    TensorId proj = e.dropout(e.conv1d(act, h + ".mlp.c_proj", bt, b.hidden, c), h + ".mlp.drop");
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
  Graph g = start_chain(shape);
  uint32_t dropout_counter = 0;
  TensorId x = emit_embedding(g, spec, shape, &dropout_counter);
  for (size_t i = 0; i < spec.blocks.size(); ++i) {
    g.blocks.back().output = x;
    x = emit_block(g, spec, spec.blocks[i], static_cast<int>(i), shape, x, &dropout_counter);
  }
  g.blocks.back().output = x;
  emit_head(g, spec, shape, x, &dropout_counter);
  finish_chain(g);
  return g;
}

Graph build_gpt(const ModelConfig& config, const TrainShape& shape) {
  config.validate();
  if (config.arch != Architecture::gpt2)
    throw std::invalid_argument("model '" + std::string(config.name()) +
                                "' is of the llama family: build it with build_model");
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
