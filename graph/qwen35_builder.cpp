#include "graph/qwen35_builder.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "graph/block_emitter.h"
#include "graph/delta_rule_workspace.h"
#include "graph/lm_head.h"

namespace remat {
namespace {

// transformers' l2norm (fla's l2norm_fwd): eps inside the root, not the config's rms_norm_eps.
constexpr float kL2normEps = 1e-6f;

struct Ctx {
  Graph& g;
  const ModelConfig& m;
  const TrainShape& s;
  int64_t bt() const { return int64_t{s.batch} * s.seq; }
  std::vector<int64_t> bt_shape(int64_t width) const { return {s.batch, s.seq, width}; }
};

// Every Qwen3.5 RMSNorm but the gated one scales by 1 + weight (Qwen3_5RMSNorm).
TensorId rmsnorm(BlockEmitter& e, const Ctx& c, TensorId x, const std::string& prefix) {
  TensorId w = e.param(prefix + ".weight", {c.m.dim});
  TensorId y = e.activation(prefix + ".out", {c.bt(), c.m.dim});
  TensorId rstd = e.activation(prefix + ".rstd", {c.bt()}, true);
  OpAttrs a;
  a.eps = c.m.norm_eps;
  a.norm_offset = true;
  e.op(OpKind::rmsnorm, {{"x", x}, {"weight", w}}, {{"y", y}, {"rstd", rstd}}, a);
  return y;
}

// q_norm / k_norm over each of `heads` heads of D; x may be wider than heads·D (q_proj's
// [q | gate] per head), its rows of D then read in place at stride width/heads.
TensorId head_rmsnorm(BlockEmitter& e, const Ctx& c, TensorId x, const std::string& prefix,
                      int64_t heads) {
  const int64_t d = c.m.head_dim();
  TensorId w = e.param(prefix + ".weight", {d});
  TensorId y = e.activation(prefix + ".out", c.bt_shape(heads * d));
  TensorId rstd = e.activation(prefix + ".rstd", {c.bt() * heads}, true);
  OpAttrs a;
  a.eps = c.m.norm_eps;
  a.norm_offset = true;
  a.heads = static_cast<int>(heads);
  e.op(OpKind::rmsnorm, {{"x", x}, {"weight", w}}, {{"y", y}, {"rstd", rstd}}, a);
  return y;
}

TensorId rope(BlockEmitter& e, const Ctx& c, TensorId x, const std::string& name, int heads) {
  TensorId y = e.activation(name, c.g.tensor(x).shape);
  OpAttrs a;
  a.heads = heads;
  a.rope_theta = c.m.rope_theta;
  a.rotary_dims = c.m.rotary_dims() < c.m.head_dim() ? c.m.rotary_dims() : 0;
  e.op(OpKind::rope, {{"x", x}}, {{"y", y}}, a);
  return y;
}

TensorId residual(BlockEmitter& e, const Ctx& c, TensorId a, TensorId b, const std::string& name) {
  TensorId y = e.activation(name, c.g.tensor(a).shape);
  e.op(OpKind::residual, {{"a", a}, {"b", b}}, {{"y", y}});
  return y;
}

TensorId gated_attention(BlockEmitter& e, const Ctx& c, TensorId n, const std::string& p) {
  const int64_t d = c.m.head_dim(), nh = c.m.heads, kv = c.m.kv_head_count();
  TensorId qg = e.linear(n, p + ".q_proj", c.bt_shape(2 * nh * d), c.m.dim, false);
  TensorId k = e.linear(n, p + ".k_proj", c.bt_shape(kv * d), c.m.dim, false);
  TensorId v = e.linear(n, p + ".v_proj", c.bt_shape(kv * d), c.m.dim, false);
  TensorId q = head_rmsnorm(e, c, qg, p + ".q_norm", nh);
  k = head_rmsnorm(e, c, k, p + ".k_norm", kv);
  TensorId qr = rope(e, c, q, p + ".q_rope", c.m.heads);
  TensorId kr = rope(e, c, k, p + ".k_rope", c.m.kv_head_count());
  TensorId att = e.activation(p + ".attn", c.bt_shape(nh * d));
  TensorId lse = e.activation(p + ".lse", {c.s.batch, nh, c.s.seq}, true);
  OpAttrs a;
  a.heads = c.m.heads;
  a.kv_heads = c.m.kv_head_count();
  e.op(OpKind::gqa_attention, {{"q", qr}, {"k", kr}, {"v", v}}, {{"out", att}, {"lse", lse}}, a);
  TensorId gated = e.activation(p + ".gated", c.bt_shape(nh * d));
  OpAttrs ga;
  ga.heads = c.m.heads;
  ga.slice_offset = static_cast<int>(d);  // each head's gate follows its D query floats
  e.op(OpKind::sigmoid_gate, {{"x", att}, {"gate", qg}}, {{"y", gated}}, ga);
  return e.linear(gated, p + ".o_proj", {c.bt(), c.m.dim}, nh * d, false);
}

// q or k: the per-head L2 norm of its part of the conv output, read in place.
TensorId l2norm(BlockEmitter& e, const Ctx& c, TensorId conv, const std::string& name,
                int64_t offset, float scale) {
  const Qwen35Layers& l = c.m.qwen35_layers;
  TensorId y = e.activation(name, c.bt_shape(int64_t{l.linear_key_heads} * l.linear_key_head_dim));
  OpAttrs a;
  a.heads = l.linear_key_heads;
  a.slice_offset = static_cast<int>(offset);
  a.scale = scale;
  a.eps = kL2normEps;
  e.op(OpKind::l2norm, {{"x", conv}}, {{"y", y}}, a);
  return y;
}

// A forward op's workspace: the chunkwise kernels' scratch for one call of `len` tokens
// (graph/delta_rule_workspace.h), live during the op alone.
TensorId delta_workspace(BlockEmitter& e, const Ctx& c, int64_t len, const std::string& name) {
  const Qwen35Layers& l = c.m.qwen35_layers;
  const uint64_t bytes = delta_rule_forward_workspace_bytes(
      {uint64_t(c.s.batch), uint64_t(l.linear_value_heads), uint64_t(l.linear_key_head_dim),
       uint64_t(l.linear_value_head_dim), uint64_t(len)});
  return c.g.add_tensor(name, {static_cast<int64_t>(bytes / 4)}, DType::f32, Role::workspace,
                        e.block(), false);
}

// The recurrence: o from q, k, v (in the conv output at `v_offset`), g and beta; with chunks,
// their start states first, as the block's own activation.
TensorId delta_rule(BlockEmitter& e, const Ctx& c, TensorId q, TensorId k, TensorId conv,
                    int64_t v_offset, TensorId g, TensorId beta, const std::string& p) {
  const Qwen35Layers& l = c.m.qwen35_layers;
  OpAttrs a;
  a.heads = l.linear_value_heads;
  a.kv_heads = l.linear_key_heads;
  a.slice_offset = static_cast<int>(v_offset);
  const int chunk = c.s.delta_chunk;
  const int64_t len = chunk > 0 && chunk < c.s.seq ? chunk : c.s.seq;
  TensorId states = kNoTensor;
  if (len < c.s.seq) {
    a.chunk_len = chunk;
    const int64_t chunks = (c.s.seq + chunk - 1) / chunk;
    states = e.activation(p + ".chunk_states",
                          {chunks - 1, c.s.batch, l.linear_value_heads, l.linear_key_head_dim,
                           l.linear_value_head_dim},
                          true);
    e.op(OpKind::gated_delta_state, {{"k", k}, {"v", conv}, {"g", g}, {"beta", beta}},
         {{"states", states}, {"workspace", delta_workspace(e, c, len, p + ".states_fwd_ws")}}, a);
  }
  TensorId o = e.activation(p + ".core",
                            c.bt_shape(int64_t{l.linear_value_heads} * l.linear_value_head_dim));
  e.op(OpKind::gated_delta_rule,
       {{"q", q}, {"k", k}, {"v", conv}, {"g", g}, {"beta", beta}, {"states", states}},
       {{"o", o}, {"workspace", delta_workspace(e, c, len, p + ".core_ws")}}, a);
  return o;
}

TensorId gated_deltanet(BlockEmitter& e, const Ctx& c, TensorId n, const std::string& p) {
  const Qwen35Layers& l = c.m.qwen35_layers;
  const int64_t key = int64_t{l.linear_key_heads} * l.linear_key_head_dim;
  const int64_t value = int64_t{l.linear_value_heads} * l.linear_value_head_dim;
  const int64_t hv = l.linear_value_heads, channels = 2 * key + value;
  TensorId qkv = e.linear(n, p + ".in_proj_qkv", c.bt_shape(channels), c.m.dim, false);
  TensorId z = e.linear(n, p + ".in_proj_z", c.bt_shape(value), c.m.dim, false);
  TensorId ra = e.linear(n, p + ".in_proj_a", c.bt_shape(hv), c.m.dim, false);
  TensorId rb = e.linear(n, p + ".in_proj_b", c.bt_shape(hv), c.m.dim, false);
  TensorId w = e.param(p + ".conv1d.weight", {channels, l.conv_kernel});
  TensorId conv = e.activation(p + ".conv", c.bt_shape(channels));
  e.op(OpKind::causal_conv1d, {{"x", qkv}, {"weight", w}}, {{"y", conv}});
  const float q_scale =
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(l.linear_key_head_dim)));
  TensorId q = l2norm(e, c, conv, p + ".q", 0, q_scale);
  TensorId k = l2norm(e, c, conv, p + ".k", key, 1.0f);
  TensorId a_log = e.param(p + ".A_log", {hv});
  TensorId dt_bias = e.param(p + ".dt_bias", {hv});
  TensorId g = e.activation(p + ".g", c.bt_shape(hv), true);
  TensorId beta = e.activation(p + ".beta", c.bt_shape(hv), true);
  e.op(OpKind::gdn_gates, {{"a", ra}, {"b", rb}, {"a_log", a_log}, {"dt_bias", dt_bias}},
       {{"g", g}, {"beta", beta}});
  TensorId o = delta_rule(e, c, q, k, conv, 2 * key, g, beta, p);
  TensorId nw = e.param(p + ".norm.weight", {l.linear_value_head_dim});
  TensorId y = e.activation(p + ".norm.out", c.bt_shape(value));
  TensorId rstd = e.activation(p + ".norm.rstd", {c.bt() * hv}, true);
  OpAttrs na;
  na.eps = c.m.norm_eps;
  e.op(OpKind::gated_rmsnorm, {{"o", o}, {"z", z}, {"weight", nw}}, {{"y", y}, {"rstd", rstd}}, na);
  return e.linear(y, p + ".out_proj", {c.bt(), c.m.dim}, value, false);
}

TensorId emit_mlp(BlockEmitter& e, const Ctx& c, TensorId n, const std::string& p) {
  const int64_t f = c.m.mlp_width();
  TensorId gate = e.linear(n, p + ".gate_proj", {c.bt(), f}, c.m.dim, false);
  TensorId up = e.linear(n, p + ".up_proj", {c.bt(), f}, c.m.dim, false);
  TensorId h = e.activation(p + ".act", {c.bt(), f});
  e.op(OpKind::swiglu, {{"gate", gate}, {"up", up}}, {{"h", h}});
  return e.linear(h, p + ".down_proj", {c.bt(), c.m.dim}, f, false);
}

TensorId emit_layer(const Ctx& c, int index, TensorId x) {
  const std::string p = "model.layers." + std::to_string(index);
  BlockEmitter e(c.g, c.s, new_block(c.g, p, x), nullptr);
  TensorId n1 = rmsnorm(e, c, x, p + ".input_layernorm");
  TensorId mixed = c.m.linear_attention_layer(index) ? gated_deltanet(e, c, n1, p + ".linear_attn")
                                                     : gated_attention(e, c, n1, p + ".self_attn");
  TensorId h = residual(e, c, x, mixed, p + ".attn_residual");
  TensorId n2 = rmsnorm(e, c, h, p + ".post_attention_layernorm");
  return residual(e, c, h, emit_mlp(e, c, n2, p + ".mlp"), p + ".mlp_residual");
}

}  // namespace

Graph build_qwen35(const ModelConfig& config, const TrainShape& shape) {
  config.validate();
  if (!config.qwen35)
    throw std::invalid_argument("model '" + std::string(config.name()) + "' is not Qwen3.5");
  shape.validate(config);
  Graph g = start_chain(shape);
  const Ctx c{g, config, shape};
  BlockEmitter e(g, shape, new_block(g, "embedding", kNoTensor), nullptr);
  TensorId wte = e.param("model.embed_tokens.weight", {config.vocab, config.dim});
  TensorId x = e.activation("model.embed_tokens.out", {c.bt(), config.dim});
  e.op(OpKind::token_embedding, {{"tokens", g.tokens}, {"wte", wte}}, {{"x", x}});
  for (int i = 0; i < config.layers; ++i) {
    g.blocks.back().output = x;
    x = emit_layer(c, i, x);
  }
  g.blocks.back().output = x;
  BlockEmitter h(g, shape, new_block(g, "head", x), nullptr);
  TensorId n = rmsnorm(h, c, x, "model.norm");
  TensorId w = config.tied_head ? g.parameters.front()
                                : h.param("lm_head.weight", {config.vocab, config.dim});
  emit_lm_head(g, h, shape, n, w);
  finish_chain(g);
  return g;
}

}  // namespace remat
