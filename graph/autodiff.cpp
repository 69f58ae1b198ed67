#include "graph/autodiff.h"

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "graph/cost_model.h"
#include "graph/gpt_builder.h"

namespace remat {
namespace {

class Differentiator {
 public:
  explicit Differentiator(Graph& g) : g_(g) {}

  void run() {
    for (TensorId p : g_.parameters) grad(p);
    for (int b = static_cast<int>(g_.blocks.size()) - 1; b >= 0; --b) {
      const std::vector<int> fwd = g_.blocks[static_cast<size_t>(b)].forward_ops;
      for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) differentiate(*it, b);
    }
    add_optimizer();
    g_.grad_of.resize(g_.tensors.size(), kNoTensor);
  }

 private:
  // The gradient tensor of `t`, created on first use.
  // Activation gradients belong to the block whose backward writes them first.
  TensorId grad(TensorId t, int block = -1) {
    if (auto it = grad_of_.find(t); it != grad_of_.end()) return it->second;
    const Tensor src = g_.tensor(t);
    const bool param = src.role == Role::parameter;
    TensorId d = g_.add_tensor((param ? "grad." : "d.") + src.name, src.shape, src.dtype,
                               param ? Role::parameter_grad : Role::activation_grad,
                               param ? -1 : block, param);
    grad_of_[t] = d;
    g_.grad_of.resize(g_.tensors.size(), kNoTensor);
    g_.grad_of[static_cast<size_t>(t)] = d;
    if (param) g_.parameter_grads.push_back(d);
    return d;
  }
  // The gradient flowing into forward output `t`; it must already have been written.
  TensorId upstream(TensorId t) {
    auto it = grad_of_.find(t);
    if (it == grad_of_.end() || !written_.count(it->second))
      throw std::logic_error("autodiff: no gradient reaches " + g_.tensor(t).name);
    return it->second;
  }

  void emit(OpKind kind, const Op& fwd, int fwd_index, std::vector<TensorId> in,
            const std::vector<TensorId>& grads_of) {
    Op o;
    o.kind = kind;
    o.inputs = std::move(in);
    o.attrs = fwd.attrs;
    o.block = fwd.block;
    o.forward_op = fwd_index;
    for (TensorId t : grads_of) {
      TensorId d = grad(t, fwd.block);
      o.outputs.push_back(d);
      o.attrs.accumulate.push_back(written_.count(d) ? 1 : 0);
      written_.insert(d);
    }
    estimate_op_work(g_, o);
    const int idx = g_.add_op(std::move(o));
    g_.blocks[static_cast<size_t>(g_.ops[static_cast<size_t>(idx)].block)].backward_ops.push_back(
        idx);
  }

  void differentiate(int index, int /*block*/) {
    const Op f = g_.ops[static_cast<size_t>(index)];
    const auto& in = f.inputs;
    const auto& out = f.outputs;
    switch (f.kind) {
      case OpKind::embedding:
        return emit(OpKind::embedding_backward, f, index, {in[0], upstream(out[0])},
                    {in[1], in[2]});
      case OpKind::layernorm:
        return emit(OpKind::layernorm_backward, f, index,
                    {upstream(out[0]), in[0], in[1], out[1], out[2]}, {in[0], in[1], in[2]});
      case OpKind::matmul: {
        std::vector<TensorId> grads = {in[0], in[1]};
        if (f.attrs.has_bias) grads.push_back(in[2]);
        return emit(OpKind::matmul_backward, f, index, {upstream(out[0]), in[0], in[1]}, grads);
      }
      case OpKind::attention:
        return emit(OpKind::attention_backward, f, index, {upstream(out[0]), in[0], out[0], out[1]},
                    {in[0]});
      case OpKind::gelu:
        return emit(OpKind::gelu_backward, f, index, {upstream(out[0]), in[0]}, {in[0]});
      case OpKind::residual:
        return emit(OpKind::residual_backward, f, index, {upstream(out[0])}, {in[0], in[1]});
      case OpKind::dropout:
        return emit(OpKind::dropout_backward, f, index, {upstream(out[0])}, {in[0]});
      case OpKind::cross_entropy:
        // The loss is the root: its backward needs no upstream gradient (mean over B*T).
        return emit(OpKind::cross_entropy_backward, f, index, {in[0], in[1]}, {in[0]});
      default:
        throw std::logic_error("autodiff: no rule for " + std::string(op_kind_name(f.kind)));
    }
  }

  void add_optimizer() {
    // Two floats: the global gradient norm and the clip scale AdamW multiplies gradients by.
    TensorId norm = g_.add_tensor("grad_norm", {2}, DType::f32, Role::workspace, -1, false);
    Op n;
    n.kind = OpKind::grad_norm;
    n.inputs = g_.parameter_grads;
    n.outputs = {norm};
    n.attrs.accumulate = {0};
    estimate_op_work(g_, n);
    g_.optimizer_ops.push_back(g_.add_op(std::move(n)));
    for (size_t i = 0; i < g_.parameters.size(); ++i) {
      const Tensor p = g_.tensor(g_.parameters[i]);
      TensorId m =
          g_.add_tensor("adam.m." + p.name, p.shape, DType::f32, Role::optimizer_state, -1, true);
      TensorId v =
          g_.add_tensor("adam.v." + p.name, p.shape, DType::f32, Role::optimizer_state, -1, true);
      g_.adam_m.push_back(m);
      g_.adam_v.push_back(v);
      Op a;
      a.kind = OpKind::adamw;
      a.inputs = {p.id, g_.parameter_grads[i], m, v, norm};
      a.outputs = {p.id, m, v};
      a.attrs.weight_decay = p.shape.size() == 2;
      a.attrs.accumulate = {0, 0, 0};
      estimate_op_work(g_, a);
      g_.optimizer_ops.push_back(g_.add_op(std::move(a)));
    }
  }

  Graph& g_;
  std::unordered_map<TensorId, TensorId> grad_of_;
  std::unordered_set<TensorId> written_;
};

}  // namespace

void autodiff(Graph& graph) {
  Differentiator(graph).run();
}

Graph build_training_gpt(const ModelConfig& config, const TrainShape& shape) {
  Graph g = build_gpt(config, shape);
  autodiff(g);
  return g;
}

}  // namespace remat
