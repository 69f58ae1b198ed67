#include "graph/cost_model.h"

#include <algorithm>
#include <stdexcept>

#include "base/json.h"
#include "base/whole_file.h"
#include "graph/op_schema.h"

namespace remat {
namespace {

double elems(const Graph& g, TensorId t) {
  return static_cast<double>(g.tensor(t).elements());
}

// (query, key) pairs a causal row of t queries visits: half of the t x t scores, less the
// triangle of t - w past a sliding window of w keys (the kernels skip it).
double visited_pairs(double t, int window) {
  const double cut = window > 0 && window < t ? t - window : 0.0;
  return (t * t - cut * cut) / 2;
}

// Causal attention over lse[B,NH,T] with C query channels over the visited pairs; 2 matmuls
// forward, 5 backward (flash recomputes S).
double attention_flops(const Tensor& lse, double c, int window, bool forward) {
  const double b = static_cast<double>(lse.shape[0]), nh = static_cast<double>(lse.shape[1]);
  const double pairs = visited_pairs(static_cast<double>(lse.shape[2]), window);
  const double fwd = 4 * b * pairs * c + 5 * b * nh * pairs;
  return forward ? fwd : 2.5 * fwd;
}

// The share R/D of a rope op's [B,T,heads·D] tensor x that turns (rotary_dims R; 0: all).
double rotated_fraction(const Graph& g, const Op& op, TensorId x) {
  if (op.attrs.rotary_dims <= 0 || op.attrs.heads <= 0) return 1.0;
  const double d = static_cast<double>(g.tensor(x).shape.back()) / op.attrs.heads;
  return std::min(1.0, op.attrs.rotary_dims / d);
}

// Per value head and token, the delta rule's work in units of one dk x dv pass over the state:
// decay, Sᵀk, the rank-1 update (5); the output Sᵀq (2); the backward recomputes the states,
// then runs about twice the forward's passes for dS, dq, dk, dv, dg and dβ (12 more).
// `gate` is g [B,T,Hv]; `values` holds Hv·dv floats per token (o or dout).
double delta_rule_flops(const Graph& g, const Op& op, TensorId k, TensorId gate, double dv,
                        double passes) {
  const double dk = static_cast<double>(g.tensor(k).shape.back()) / std::max(1, op.attrs.kv_heads);
  return passes * elems(g, gate) * dk * dv;
}

// Head size of a [B,T,H·D] tensor of `heads` heads.
double head_size(const Graph& g, TensorId t, int heads) {
  return static_cast<double>(g.tensor(t).shape.back()) / std::max(1, heads);
}

// Taps of a causal_conv1d weight [C,K].
double taps(const Graph& g, TensorId weight) {
  return static_cast<double>(g.tensor(weight).shape.back());
}

// FLOPs per element of the op's first output (elementwise kinds) or an exact count (matmuls,
// attention). Rough constants are fine: the planner compares plans that run the same ops.
double op_flops(const Graph& g, const Op& op) {
  const auto in = [&](std::size_t slot) { return op.inputs.at(slot); };
  const auto out = [&](std::size_t slot) { return op.outputs.at(slot); };
  switch (op.kind) {
    case OpKind::matmul:
    case OpKind::matmul_backward: {
      // Activations may be [M,K] or [B,T,K]: rows are everything but the last axis.
      const bool fwd_op = op.kind == OpKind::matmul;
      const Tensor& x = g.tensor(fwd_op ? in(slot::matmul::x) : out(slot::matmul_backward::dx));
      const Tensor& y = g.tensor(fwd_op ? out(slot::matmul::y) : in(slot::matmul_backward::dy));
      const double k = static_cast<double>(x.shape.back());
      const double m = static_cast<double>(x.elements()) / k;
      const double n = static_cast<double>(y.shape.back());
      // A frozen weight's backward computes dx only (x is then not an input; dx has its shape).
      if (!fwd_op && op.attrs.frozen) return 2 * m * k * n;
      const bool adds = fwd_op && op.attrs.adds_residual;
      return (fwd_op ? 2 : 4) * m * k * n + (op.attrs.has_bias ? m * n : 0) + (adds ? m * n : 0);
    }
    case OpKind::attention:
    case OpKind::attention_backward: {
      const bool fwd_op = op.kind == OpKind::attention;
      const Tensor& qkv =
          g.tensor(fwd_op ? in(slot::attention::qkv) : in(slot::attention_backward::qkv));
      const Tensor& lse =
          g.tensor(fwd_op ? out(slot::attention::lse) : in(slot::attention_backward::lse));
      return attention_flops(lse, static_cast<double>(qkv.shape[1]) / 3, op.attrs.window, fwd_op);
    }
    case OpKind::gqa_attention:
    case OpKind::gqa_attention_backward: {
      // The query width sets the work; fewer key/value heads only save bytes.
      const bool fwd_op = op.kind == OpKind::gqa_attention;
      const Tensor& q =
          g.tensor(fwd_op ? in(slot::gqa_attention::q) : in(slot::gqa_attention_backward::q));
      const Tensor& lse =
          g.tensor(fwd_op ? out(slot::gqa_attention::lse) : in(slot::gqa_attention_backward::lse));
      return attention_flops(lse, static_cast<double>(q.shape.back()), op.attrs.window, fwd_op);
    }
    case OpKind::layernorm:
      return 8 * elems(g, out(slot::layernorm::y));
    case OpKind::layernorm_backward:
      return (op.attrs.frozen ? 10 : 14) * elems(g, in(slot::layernorm_backward::x));
    case OpKind::gelu:
      return 10 * elems(g, out(slot::gelu::y));
    case OpKind::gelu_backward:
      return 16 * elems(g, in(slot::gelu_backward::x));
    case OpKind::residual:
      return (op.attrs.scale == 1.0f ? 1 : 2) * elems(g, out(slot::residual::y));
    case OpKind::residual_backward:
      return op.attrs.scale == 1.0f ? 0 : elems(g, in(slot::residual_backward::dy));
    case OpKind::dropout:
      return 3 * elems(g, out(slot::dropout::y));
    case OpKind::dropout_backward:
      return 3 * elems(g, out(slot::dropout_backward::dx));
    case OpKind::embedding:
      return elems(g, out(slot::embedding::x));
    case OpKind::embedding_backward:
      return 2 * elems(g, in(slot::embedding_backward::dx));
    case OpKind::cross_entropy:
      return 5 * elems(g, in(slot::cross_entropy::logits));
    case OpKind::cross_entropy_backward:
      return 5 * elems(g, in(slot::cross_entropy_backward::logits));
    case OpKind::token_embedding:
      return elems(g, out(slot::token_embedding::x));
    case OpKind::token_embedding_backward:
      return elems(g, in(slot::token_embedding_backward::dx));
    case OpKind::rmsnorm:
      return 5 * elems(g, out(slot::rmsnorm::y));
    case OpKind::rmsnorm_backward:
      return 10 * elems(g, in(slot::rmsnorm_backward::x));
    case OpKind::rope:  // a cos and a sin per pair, then a rotation; pass-through is a copy
      return 12 * elems(g, out(slot::rope::y)) * rotated_fraction(g, op, out(slot::rope::y));
    case OpKind::rope_backward:
      return 12 * elems(g, out(slot::rope_backward::dx)) *
             rotated_fraction(g, op, out(slot::rope_backward::dx));
    case OpKind::swiglu:
      return 8 * elems(g, out(slot::swiglu::h));
    case OpKind::swiglu_backward:
      return 16 * elems(g, in(slot::swiglu_backward::dh));
    case OpKind::head_loss:
    case OpKind::head_loss_backward: {
      // The head's matmuls over every row (1 forward, 3 backward: recompute, dx, dW — no dW
      // when the weight is frozen) plus the softmax; chunking changes when the work happens,
      // not how much.
      const Tensor& x = g.tensor(in(slot::head_loss::x));
      const Tensor& w = g.tensor(in(slot::head_loss::weight));
      const double m = static_cast<double>(x.elements()) / static_cast<double>(x.shape.back());
      const double logits = m * static_cast<double>(w.shape[0]);
      const double mm = 2 * logits * static_cast<double>(x.shape.back());
      if (op.kind == OpKind::head_loss) return mm + 5 * logits;
      return (op.attrs.frozen ? 2 : 3) * mm + 10 * logits;
    }
    case OpKind::grad_norm: {
      double n = 0;
      for (TensorId t : op.inputs) n += elems(g, t);
      return 2 * n;
    }
    case OpKind::adamw:
      return 12 * elems(g, in(slot::adamw::param));
    case OpKind::causal_conv1d:  // the taps' fmas, then SiLU
      return (2 * taps(g, in(slot::causal_conv1d::weight)) + 5) *
             elems(g, out(slot::causal_conv1d::y));
    case OpKind::causal_conv1d_backward: {  // dx recomputes the taps; dw sums another 2K each
      namespace c = slot::causal_conv1d_backward;
      const double k = taps(g, in(c::weight));
      return ((op.attrs.frozen ? 4 : 6) * k + 10) * elems(g, in(c::dy));
    }
    case OpKind::l2norm:
      return 3 * elems(g, out(slot::l2norm::y));
    case OpKind::l2norm_backward:
      return 8 * elems(g, in(slot::l2norm_backward::dy));
    case OpKind::gdn_gates:
      return 20 * elems(g, out(slot::gdn_gates::g));
    case OpKind::gdn_gates_backward:
      return 24 * elems(g, in(slot::gdn_gates_backward::dg));
    case OpKind::gated_rmsnorm:
      return 10 * elems(g, out(slot::gated_rmsnorm::y));
    case OpKind::gated_rmsnorm_backward:
      return (op.attrs.frozen ? 18 : 22) * elems(g, in(slot::gated_rmsnorm_backward::dy));
    case OpKind::sigmoid_gate:
      return 6 * elems(g, out(slot::sigmoid_gate::y));
    case OpKind::sigmoid_gate_backward:
      return 10 * elems(g, in(slot::sigmoid_gate_backward::dy));
    case OpKind::gated_delta_state: {
      namespace d = slot::gated_delta_state;
      const double dv = static_cast<double>(g.tensor(out(d::states)).shape.back());
      return delta_rule_flops(g, op, in(d::k), in(d::g), dv, 5);
    }
    case OpKind::gated_delta_rule: {
      namespace d = slot::gated_delta_rule;
      const double dv = head_size(g, out(d::o), op.attrs.heads);
      return delta_rule_flops(g, op, in(d::k), in(d::g), dv, 7);
    }
    case OpKind::gated_delta_rule_backward: {
      namespace d = slot::gated_delta_rule_backward;
      const double dv = head_size(g, in(d::dout), op.attrs.heads);
      return delta_rule_flops(g, op, in(d::k), in(d::g), dv, 17);
    }
  }
  return 0;
}

KernelRate read_rate(const JsonValue& v, const KernelRate& base, const std::string& where) {
  if (v.type != JsonValue::Type::object)
    throw std::invalid_argument("cost table: " + where + " must be an object of rates");
  KernelRate r = base;
  for (const auto& [key, val] : v.object) {
    double* field = key == "flops_per_s"   ? &r.flops_per_s
                    : key == "bytes_per_s" ? &r.bytes_per_s
                    : key == "launch_s"    ? &r.launch_s
                                           : nullptr;
    if (!field)
      throw std::invalid_argument("cost table: unknown field '" + key + "' in " + where +
                                  "; use flops_per_s, bytes_per_s, launch_s");
    if (val.type != JsonValue::Type::number || val.number < 0 ||
        (key != "launch_s" && val.number <= 0))
      throw std::invalid_argument("cost table: " + where + "." + key +
                                  " must be a positive number");
    *field = val.number;
  }
  return r;
}

}  // namespace

void estimate_op_work(const Graph& graph, Op& op) {
  op.flops = op_flops(graph, op);
  double bytes = 0;
  for (TensorId t : op.inputs) bytes += static_cast<double>(graph.tensor(t).bytes());
  for (TensorId t : op.outputs) bytes += static_cast<double>(graph.tensor(t).bytes());
  op.bytes = bytes;
}

CostModel CostModel::from_json(std::string_view text) {
  const JsonValue doc = parse_json(text);
  if (doc.type != JsonValue::Type::object)
    throw std::invalid_argument("cost table: the document must be a JSON object");
  CostModel m;
  for (const auto& [key, val] : doc.object)
    if (key != "default" && key != "kernels")
      throw std::invalid_argument("cost table: unknown key '" + key + "'; use default, kernels");
  if (const JsonValue* d = doc.find("default")) m.default_ = read_rate(*d, m.default_, "default");
  if (const JsonValue* k = doc.find("kernels")) {
    if (k->type != JsonValue::Type::object)
      throw std::invalid_argument("cost table: kernels must be an object keyed by op kind");
    for (const auto& [name, val] : k->object) {
      OpKind kind;
      if (!parse_op_kind(name, &kind))
        throw std::invalid_argument("cost table: unknown kernel '" + name +
                                    "'; use an op kind from docs/ops.md");
      m.kernels_[kind] = read_rate(val, m.default_, name);
    }
  }
  return m;
}

CostModel CostModel::load(const std::string& path) {
  return from_json(read_whole_file(path));
}

const KernelRate& CostModel::rate(OpKind kind) const {
  auto it = kernels_.find(kind);
  return it == kernels_.end() ? default_ : it->second;
}

double CostModel::seconds(const Op& op) const {
  const KernelRate& r = rate(op.kind);
  return std::max(op.flops / r.flops_per_s, op.bytes / r.bytes_per_s) + r.launch_s;
}

}  // namespace remat
