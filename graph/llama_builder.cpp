#include "graph/llama_builder.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "graph/block_emitter.h"
#include "graph/lm_head.h"

namespace remat {
namespace {

// Gemma's norms (ModelConfig::gemma3) scale by 1 + weight.
TensorId rmsnorm(BlockEmitter& e, const ModelConfig& m, TensorId x, const std::string& prefix,
                 int64_t rows) {
  const int64_t c = m.dim;
  TensorId w = e.param(prefix + ".weight", {c});
  TensorId y = e.activation(prefix + ".out", {rows, c});
  TensorId rstd = e.activation(prefix + ".rstd", {rows}, true);
  OpAttrs a;
  a.eps = m.norm_eps;
  a.norm_offset = m.gemma3;
  e.op(OpKind::rmsnorm, {{"x", x}, {"weight", w}}, {{"y", y}, {"rstd", rstd}}, a);
  return y;
}

// Qwen3's q_norm / k_norm: RMSNorm over each head of x [B, T, heads·D] with one gain [D] shared
// by the heads. The rmsnorm op normalises rows as long as its weight (runtime/lowering_context.h),
// so x is read as B·T·heads rows of D where it lies, with no reshape.
TensorId head_rmsnorm(BlockEmitter& e, const Graph& g, const ModelConfig& m, TensorId x,
                      const std::string& prefix, int64_t heads) {
  const int64_t d = m.head_dim();
  const std::vector<int64_t> shape = g.tensor(x).shape;
  TensorId w = e.param(prefix + ".weight", {d});
  TensorId y = e.activation(prefix + ".out", shape);
  TensorId rstd = e.activation(prefix + ".rstd", {shape[0] * shape[1] * heads}, true);
  OpAttrs a;
  a.eps = m.norm_eps;
  a.norm_offset = m.gemma3;
  e.op(OpKind::rmsnorm, {{"x", x}, {"weight", w}}, {{"y", y}, {"rstd", rstd}}, a);
  return y;
}

// Gemma's local layers rotate with their own base (rope_local_base_freq).
TensorId rope(BlockEmitter& e, const Graph& g, TensorId x, const std::string& name, int heads,
              const ModelConfig& m, bool global) {
  TensorId y = e.activation(name, g.tensor(x).shape);
  OpAttrs a;
  a.heads = heads;
  a.rope_theta = global ? m.rope_theta : m.gemma.local_rope_theta;
  a.rope_llama3 = m.llama3;
  if (global && m.gemma.rope_linear != 0.0f) a.rope_llama3 = linear_scaling(m.gemma.rope_linear);
  e.op(OpKind::rope, {{"x", x}}, {{"y", y}}, a);
  return y;
}

TensorId residual(BlockEmitter& e, TensorId a, TensorId b, const std::string& name,
                  const Graph& g) {
  TensorId y = e.activation(name, g.tensor(a).shape);
  e.op(OpKind::residual, {{"a", a}, {"b", b}}, {{"y", y}});
  return y;
}

// Gemma's attention settings: a local layer's window, and the score scale
// query_pre_attn_scalar^-1/2. Each is left at its default where it changes nothing (a window at
// least the sequence long sees every earlier key; a scalar equal to the head size is the default
// scale), so such graphs equal the Llama family's op for op.
void gemma_attention(OpAttrs& a, const ModelConfig& m, const TrainShape& s, bool global) {
  if (!m.gemma3) return;
  if (!global && m.gemma.sliding_window < s.seq) a.window = m.gemma.sliding_window;
  if (m.gemma.query_scalar != static_cast<float>(m.head_dim()))
    a.attn_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.gemma.query_scalar)));
}

TensorId emit_attention(BlockEmitter& e, Graph& g, const ModelConfig& m, const TrainShape& s,
                        TensorId n, const std::string& p, bool global) {
  const int64_t c = m.dim, d = m.head_dim(), nh = m.heads, kv = m.kv_head_count();
  const int64_t bt = int64_t{s.batch} * s.seq;
  TensorId q = e.linear(n, p + ".q_proj", {s.batch, s.seq, nh * d}, c, m.qkv_bias);
  TensorId k = e.linear(n, p + ".k_proj", {s.batch, s.seq, kv * d}, c, m.qkv_bias);
  TensorId v = e.linear(n, p + ".v_proj", {s.batch, s.seq, kv * d}, c, m.qkv_bias);
  if (m.qk_norm) {
    q = head_rmsnorm(e, g, m, q, p + ".q_norm", nh);
    k = head_rmsnorm(e, g, m, k, p + ".k_norm", kv);
  }
  TensorId qr = rope(e, g, q, p + ".q_rope", m.heads, m, global);
  TensorId kr = rope(e, g, k, p + ".k_rope", m.kv_head_count(), m, global);
  TensorId att = e.activation(p + ".out", {s.batch, s.seq, nh * d});
  TensorId lse = e.activation(p + ".lse", {s.batch, nh, s.seq}, true);
  OpAttrs a;
  a.heads = m.heads;
  a.kv_heads = m.kv_head_count();
  gemma_attention(a, m, s, global);
  e.op(OpKind::gqa_attention, {{"q", qr}, {"k", kr}, {"v", v}}, {{"out", att}, {"lse", lse}}, a);
  return e.linear(att, p + ".o_proj", {bt, c}, nh * d, false);
}

TensorId emit_mlp(BlockEmitter& e, const ModelConfig& m, const TrainShape& s, TensorId n,
                  const std::string& p) {
  const int64_t bt = int64_t{s.batch} * s.seq, c = m.dim, f = m.mlp_width();
  TensorId gate = e.linear(n, p + ".gate_proj", {bt, f}, c, false);
  TensorId up = e.linear(n, p + ".up_proj", {bt, f}, c, false);
  TensorId h = e.activation(p + ".act", {bt, f});
  OpAttrs a;
  a.gelu_gate = m.gemma3;  // Gemma: GeGLU (gelu_pytorch_tanh)
  e.op(OpKind::swiglu, {{"gate", gate}, {"up", up}}, {{"h", h}}, a);
  return e.linear(h, p + ".down_proj", {bt, c}, f, false);
}

TensorId emit_layer(Graph& g, const ModelConfig& m, const TrainShape& s, int index, TensorId x) {
  const int64_t bt = int64_t{s.batch} * s.seq;
  const std::string p = "model.layers." + std::to_string(index);
  BlockEmitter e(g, s, new_block(g, p, x), nullptr);
  const bool global = m.global_layer(index);
  TensorId n1 = rmsnorm(e, m, x, p + ".input_layernorm", bt);
  TensorId att = emit_attention(e, g, m, s, n1, p + ".self_attn", global);
  if (m.gemma3) {  // Gemma's sandwich: a norm after attention, one before and after the MLP
    att = rmsnorm(e, m, att, p + ".post_attention_layernorm", bt);
    TensorId h = residual(e, x, att, p + ".attn_residual", g);
    TensorId n2 = rmsnorm(e, m, h, p + ".pre_feedforward_layernorm", bt);
    TensorId mlp =
        rmsnorm(e, m, emit_mlp(e, m, s, n2, p + ".mlp"), p + ".post_feedforward_layernorm", bt);
    return residual(e, h, mlp, p + ".mlp_residual", g);
  }
  TensorId h = residual(e, x, att, p + ".attn_residual", g);
  TensorId n2 = rmsnorm(e, m, h, p + ".post_attention_layernorm", bt);
  return residual(e, h, emit_mlp(e, m, s, n2, p + ".mlp"), p + ".mlp_residual", g);
}

void emit_head(Graph& g, const ModelConfig& m, const TrainShape& s, TensorId x) {
  const int64_t bt = int64_t{s.batch} * s.seq;
  BlockEmitter e(g, s, new_block(g, "head", x), nullptr);
  TensorId n = rmsnorm(e, m, x, "model.norm", bt);
  // Tied: the head reads the token embedding (the first parameter) as [V, C].
  TensorId w = m.tied_head ? g.parameters.front() : e.param("lm_head.weight", {m.vocab, m.dim});
  emit_lm_head(g, e, s, n, w);
}

}  // namespace

Graph build_llama(const ModelConfig& config, const TrainShape& shape) {
  config.validate();
  if (config.arch != Architecture::llama)
    throw std::invalid_argument("model '" + std::string(config.name()) +
                                "' is not of the llama family");
  shape.validate(config);
  Graph g = start_chain(shape);
  const int64_t bt = int64_t{shape.batch} * shape.seq;
  BlockEmitter e(g, shape, new_block(g, "embedding", kNoTensor), nullptr);
  TensorId wte = e.param("model.embed_tokens.weight", {config.vocab, config.dim});
  TensorId x = e.activation("model.embed_tokens.out", {bt, config.dim});
  OpAttrs a;
  // Gemma scales the embedding by sqrt(width), rounded to float as transformers' buffer is.
  if (config.gemma3) a.scale = static_cast<float>(std::sqrt(static_cast<double>(config.dim)));
  e.op(OpKind::token_embedding, {{"tokens", g.tokens}, {"wte", wte}}, {{"x", x}}, a);
  for (int i = 0; i < config.layers; ++i) {
    g.blocks.back().output = x;
    x = emit_layer(g, config, shape, i, x);
  }
  g.blocks.back().output = x;
  emit_head(g, config, shape, x);
  finish_chain(g);
  return g;
}

}  // namespace remat
