#include "graph/autodiff.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "graph/cost_model.h"
#include "graph/delta_rule_workspace.h"
#include "graph/gpt_builder.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"

namespace remat {
namespace {

class Differentiator {
 public:
  explicit Differentiator(Graph& g) : g_(g), frozen_(g.frozen.begin(), g.frozen.end()) {}

  void run() {
    fwd_ = forward_index(g_);
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
    if (frozen_.count(t))
      throw std::logic_error("autodiff: frozen " + src.name + " got a gradient");
    const bool param = src.role == Role::parameter;
    // Gradients are fp32 whatever the activations' storage: they are transient, and summed.
    TensorId d = g_.add_tensor((param ? "grad." : "d.") + src.name, src.shape, DType::f32,
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
    if (it == grad_of_.end() || (!written_.count(it->second) && !partly_written_.count(it->second)))
      throw std::logic_error("autodiff: no gradient reaches " + g_.tensor(t).name);
    return it->second;
  }

  using Named = std::initializer_list<std::pair<std::string_view, TensorId>>;

  // Appends backward op `kind` of forward op `fwd`. `grads_of` names each output by the forward
  // tensor whose gradient it writes (kNoTensor leaves an optional output out); `workspaces` names
  // the outputs that are scratch tensors of the op itself. `frozen`: the forward's weights are
  // frozen (its backward writes dx only). An output written only at the places the forward read
  // its input from counts by its part (in_place_gradient_offset).
  void emit(OpKind kind, const Op& fwd, int fwd_index, Named inputs, Named grads_of,
            bool frozen = false, Named workspaces = {}) {
    Op o;
    o.kind = kind;
    // A packed forward's backward reads the same positions (its last input).
    std::vector<std::pair<std::string_view, TensorId>> in(inputs);
    if (fwd.attrs.packed && takes_positions(kind)) in.emplace_back("positions", fwd.inputs.back());
    o.inputs = named_operands(kind, false, in);
    o.attrs = fwd.attrs;
    o.attrs.frozen = frozen;
    o.attrs.adds_residual = false;  // a fused residual's backward is only the shared gradient
    o.block = fwd.block;
    o.forward_op = fwd_index;
    std::vector<std::pair<std::string_view, TensorId>> named(grads_of);
    named.insert(named.end(), workspaces.begin(), workspaces.end());
    for (TensorId t : named_operands(kind, true, named)) {
      const bool scratch = std::any_of(workspaces.begin(), workspaces.end(),
                                       [&](const auto& w) { return w.second == t; });
      const TensorId d = scratch ? t : grad(t, fwd.block);
      const int part = in_place_gradient_offset(g_, o, o.outputs.size());
      o.outputs.push_back(d);
      if (part >= 0) {
        o.attrs.accumulate.push_back(write_slice(d, part) ? 1 : 0);
        continue;
      }
      if (partly_written_.count(d))
        throw std::logic_error("autodiff: " + g_.tensor(d).name +
                               " is written whole after a part of it");
      o.attrs.accumulate.push_back(written_.count(d) ? 1 : 0);
      if (!scratch) written_.insert(d);
    }
    estimate_op_work(g_, o);
    const int idx = g_.add_op(std::move(o));
    g_.blocks[static_cast<size_t>(g_.ops[static_cast<size_t>(idx)].block)].backward_ops.push_back(
        idx);
  }

  // y = a + b: both gradients equal dy, so the residual's backward would only copy it. The
  // copies can be skipped, a's and b's gradients being dy's tensor itself, when nothing can tell
  // the three apart: no gradient of a or b is written yet, b has no other consumer (so its
  // gradient is only read, by the backward of b's producer), and every other consumer of a comes
  // before b's producer (so their backwards, which add into a's gradient, run after that read).
  // The sums are then the same additions in the same order as with the copies: the same bits.
  bool forwards_gradient(const Op& f, int index) const {
    namespace r = slot::residual;
    const TensorId a = f.inputs.at(r::a), b = f.inputs.at(r::b);
    if (f.attrs.scale != 1.0f || a == b || grad_of_.count(a) || grad_of_.count(b)) return false;
    for (TensorId t : {a, b})
      if (g_.tensor(t).role != Role::activation || frozen_.count(t)) return false;
    const int made_b = fwd_.producer[static_cast<size_t>(b)];
    return made_b >= 0 && fwd_.only_reader(b, index) && fwd_.read_before(a, index, made_b);
  }

  // Records a write of gradient `d` at the places starting `offset` floats into its rows (the
  // forward read its input in place there); returns whether the write adds (those places, or
  // the whole tensor, hold a gradient already). The writers of one tensor's parts must cover it
  // together: each reads a disjoint part, which is how the builder places them.
  bool write_slice(TensorId d, int offset) {
    if (written_.count(d)) return true;
    partly_written_.insert(d);
    return !slices_written_.insert({d, offset}).second;
  }

  void share_gradient(TensorId t, TensorId d) {
    grad_of_[t] = d;
    g_.grad_of.resize(g_.tensors.size(), kNoTensor);
    g_.grad_of[static_cast<size_t>(t)] = d;
  }

  // Whether the op's parameters (`weight`, and `bias` if any) are frozen; a mix is refused.
  bool weights_frozen(TensorId weight, TensorId bias) const {
    const bool w = frozen_.count(weight) > 0;
    if (bias != kNoTensor && (frozen_.count(bias) > 0) != w)
      throw std::logic_error("autodiff: " + g_.tensor(weight).name + " and " +
                             g_.tensor(bias).name + " must be frozen together");
    return w;
  }

  void differentiate(int index, int /*block*/) {
    const Op f = g_.ops[static_cast<size_t>(index)];
    const auto in = [&](std::size_t slot) { return f.inputs.at(slot); };
    const auto out = [&](std::size_t slot) { return f.outputs.at(slot); };
    switch (f.kind) {
      case OpKind::embedding: {
        namespace e = slot::embedding;
        // A frozen embedding has no gradient to write: its backward is omitted.
        if (weights_frozen(in(e::wte), in(e::wpe))) return;
        return emit(OpKind::embedding_backward, f, index,
                    {{"tokens", in(e::tokens)}, {"dx", upstream(out(e::x))}},
                    {{"dwte", in(e::wte)}, {"dwpe", in(e::wpe)}});
      }
      case OpKind::layernorm: {
        namespace l = slot::layernorm;
        const bool frozen = weights_frozen(in(l::weight), in(l::bias));
        const TensorId none = kNoTensor;
        return emit(OpKind::layernorm_backward, f, index,
                    {{"dy", upstream(out(l::y))},
                     {"x", in(l::x)},
                     {"weight", in(l::weight)},
                     {"mean", out(l::mean)},
                     {"rstd", out(l::rstd)}},
                    {{"dx", in(l::x)},
                     {"dweight", frozen ? none : in(l::weight)},
                     {"dbias", frozen ? none : in(l::bias)}},
                    frozen);
      }
      case OpKind::matmul: {
        // A frozen weight: dx only, and x (which only dweight reads) is not an input, so the
        // planner need not keep it for the backward.
        namespace m = slot::matmul;
        // (Without a bias, slot 2 may hold a fused residual instead.)
        const TensorId bias = f.attrs.has_bias ? f.inputs.at(m::bias) : kNoTensor;
        const bool frozen = weights_frozen(in(m::weight), bias);
        const TensorId none = kNoTensor;
        emit(OpKind::matmul_backward, f, index,
             {{"dy", upstream(out(m::y))},
              {"weight", in(m::weight)},
              {"x", frozen ? none : in(m::x)}},
             {{"dx", in(m::x)},
              {"dweight", frozen ? none : in(m::weight)},
              {"dbias", frozen ? none : bias}},
             frozen);
        // y = residual + x·W (graph/residual_fusion.h): the residual's gradient is dy itself.
        // The fusion leaves it only where no gradient of it is written before this point.
        if (const TensorId r = matmul_residual(f); r != kNoTensor) {
          if (grad_of_.count(r))
            throw std::logic_error("autodiff: fused residual " + g_.tensor(r).name +
                                   " already has a gradient");
          share_gradient(r, upstream(out(m::y)));
        }
        return;
      }
      case OpKind::attention: {
        namespace a = slot::attention;
        return emit(OpKind::attention_backward, f, index,
                    {{"dout", upstream(out(a::out))},
                     {"qkv", in(a::qkv)},
                     {"out", out(a::out)},
                     {"lse", out(a::lse)}},
                    {{"dqkv", in(a::qkv)}});
      }
      case OpKind::gelu:
        return emit(OpKind::gelu_backward, f, index,
                    {{"dy", upstream(out(slot::gelu::y))}, {"x", in(slot::gelu::x)}},
                    {{"dx", in(slot::gelu::x)}});
      case OpKind::residual: {
        namespace r = slot::residual;
        if (forwards_gradient(f, index)) {
          const TensorId dy = upstream(out(r::y));
          share_gradient(in(r::a), dy);
          share_gradient(in(r::b), dy);
          return;
        }
        return emit(OpKind::residual_backward, f, index, {{"dy", upstream(out(r::y))}},
                    {{"da", in(r::a)}, {"db", in(r::b)}});
      }
      case OpKind::dropout:
        return emit(OpKind::dropout_backward, f, index, {{"dy", upstream(out(slot::dropout::y))}},
                    {{"dx", in(slot::dropout::x)}});
      case OpKind::cross_entropy: {
        // The loss is the root: its backward needs no upstream gradient (mean over B*T).
        namespace c = slot::cross_entropy;
        return emit(OpKind::cross_entropy_backward, f, index,
                    {{"logits", in(c::logits)}, {"targets", in(c::targets)}},
                    {{"dlogits", in(c::logits)}});
      }
      case OpKind::head_loss:
        return head_loss(f, index);
      case OpKind::token_embedding: {
        namespace e = slot::token_embedding;
        if (weights_frozen(in(e::wte), kNoTensor)) return;  // nothing to write, as above
        return emit(OpKind::token_embedding_backward, f, index,
                    {{"tokens", in(e::tokens)}, {"dx", upstream(out(e::x))}},
                    {{"dwte", in(e::wte)}});
      }
      case OpKind::rmsnorm: {
        namespace r = slot::rmsnorm;
        const bool frozen = weights_frozen(in(r::weight), kNoTensor);
        return emit(OpKind::rmsnorm_backward, f, index,
                    {{"dy", upstream(out(r::y))},
                     {"x", in(r::x)},
                     {"weight", in(r::weight)},
                     {"rstd", out(r::rstd)}},
                    {{"dx", in(r::x)}, {"dweight", frozen ? kNoTensor : in(r::weight)}}, frozen);
      }
      case OpKind::rope:
        // A rotation: its backward needs only the upstream gradient.
        return emit(OpKind::rope_backward, f, index, {{"dy", upstream(out(slot::rope::y))}},
                    {{"dx", in(slot::rope::x)}});
      case OpKind::gqa_attention: {
        namespace a = slot::gqa_attention;
        return emit(OpKind::gqa_attention_backward, f, index,
                    {{"dout", upstream(out(a::out))},
                     {"q", in(a::q)},
                     {"k", in(a::k)},
                     {"v", in(a::v)},
                     {"out", out(a::out)},
                     {"lse", out(a::lse)}},
                    {{"dq", in(a::q)}, {"dk", in(a::k)}, {"dv", in(a::v)}});
      }
      case OpKind::swiglu: {
        namespace w = slot::swiglu;
        return emit(OpKind::swiglu_backward, f, index,
                    {{"dh", upstream(out(w::h))}, {"gate", in(w::gate)}, {"up", in(w::up)}},
                    {{"dgate", in(w::gate)}, {"dup", in(w::up)}});
      }
      case OpKind::causal_conv1d: {
        namespace c = slot::causal_conv1d;
        const bool frozen = weights_frozen(in(c::weight), kNoTensor);
        return emit(OpKind::causal_conv1d_backward, f, index,
                    {{"dy", upstream(out(c::y))}, {"x", in(c::x)}, {"weight", in(c::weight)}},
                    {{"dx", in(c::x)}, {"dweight", frozen ? kNoTensor : in(c::weight)}}, frozen);
      }
      case OpKind::l2norm:
        return emit(OpKind::l2norm_backward, f, index,
                    {{"dy", upstream(out(slot::l2norm::y))}, {"x", in(slot::l2norm::x)}},
                    {{"dx", in(slot::l2norm::x)}});
      case OpKind::gdn_gates: {
        namespace q = slot::gdn_gates;
        const bool frozen = weights_frozen(in(q::a_log), in(q::dt_bias));
        return emit(OpKind::gdn_gates_backward, f, index,
                    {{"dg", upstream(out(q::g))},
                     {"dbeta", upstream(out(q::beta))},
                     {"a", in(q::a)},
                     {"b", in(q::b)},
                     {"a_log", in(q::a_log)},
                     {"dt_bias", in(q::dt_bias)}},
                    {{"da", in(q::a)},
                     {"db", in(q::b)},
                     {"da_log", frozen ? kNoTensor : in(q::a_log)},
                     {"ddt_bias", frozen ? kNoTensor : in(q::dt_bias)}},
                    frozen);
      }
      case OpKind::gated_rmsnorm: {
        namespace r = slot::gated_rmsnorm;
        const bool frozen = weights_frozen(in(r::weight), kNoTensor);
        return emit(
            OpKind::gated_rmsnorm_backward, f, index,
            {{"dy", upstream(out(r::y))},
             {"o", in(r::o)},
             {"z", in(r::z)},
             {"weight", in(r::weight)},
             {"rstd", out(r::rstd)}},
            {{"d_o", in(r::o)}, {"dz", in(r::z)}, {"dweight", frozen ? kNoTensor : in(r::weight)}},
            frozen);
      }
      case OpKind::sigmoid_gate: {
        namespace s = slot::sigmoid_gate;
        return emit(OpKind::sigmoid_gate_backward, f, index,
                    {{"dy", upstream(out(s::y))}, {"x", in(s::x)}, {"gate", in(s::gate)}},
                    {{"dx", in(s::x)}, {"dgate", in(s::gate)}});
      }
      case OpKind::gated_delta_state:
        // A checkpoint of gated_delta_rule's recurrence: the rule's backward differentiates
        // the whole recurrence (the state gradient crosses chunks inside it), so the states
        // carry no gradient and their op none.
        return;
      case OpKind::gated_delta_rule:
        return delta_rule(f, index);
      default:
        throw std::logic_error("autodiff: no rule for " + std::string(op_kind_name(f.kind)));
    }
  }

  // The loss is the root: no upstream gradient. The backward recomputes each chunk's logits into
  // a workspace of its own (the forward's is dead by then), so nothing of [B·T, V] is kept. A
  // frozen head weight (LoRA freezes the tied embedding, or an untied lm_head) gets no dweight;
  // x is still read, since dx needs the recomputed logits.
  void head_loss(const Op& f, int index) {
    namespace h = slot::head_loss;
    const TensorId x = f.inputs.at(h::x), weight = f.inputs.at(h::weight);
    const bool frozen = weights_frozen(weight, kNoTensor);
    const Tensor chunk = g_.tensor(f.outputs.at(h::logits));
    grad(x, f.block);  // dx's tensor is created before the workspace, as the ids always were
    const TensorId dlogits = g_.add_tensor("head.dlogits_chunk", chunk.shape, chunk.dtype,
                                           Role::workspace, f.block, false);
    emit(OpKind::head_loss_backward, f, index,
         {{"x", x}, {"weight", weight}, {"targets", f.inputs.at(h::targets)}},
         {{"dx", x}, {"dweight", frozen ? kNoTensor : weight}}, frozen, {{"dlogits", dlogits}});
  }

  // The backward recomputes each chunk's states from its start state into a workspace sized for
  // one chunk of L steps (L the chunk length, or T unchunked; graph/delta_rule_workspace.h): the
  // memory a chunk length trades against the kept start states.
  void delta_rule(const Op& f, int index) {
    namespace d = slot::gated_delta_rule;
    const std::vector<int64_t> gs = g_.tensor(f.inputs.at(d::g)).shape;  // [B,T,Hv]; a copy
    const int64_t hk = std::max(1, f.attrs.kv_heads), hv = std::max(1, f.attrs.heads);
    const int64_t dk = g_.tensor(f.inputs.at(d::k)).shape.back() / hk;
    const int64_t dv = g_.tensor(f.outputs.at(d::o)).shape.back() / hv;
    const int64_t len = f.attrs.chunk_len > 0 ? std::min<int64_t>(f.attrs.chunk_len, gs[1]) : gs[1];
    for (std::size_t s : {d::q, d::k, d::v, d::g, d::beta}) grad(f.inputs.at(s), f.block);
    const DeltaRuleWorkspaceLayout layout = delta_rule_workspace_layout(
        {uint64_t(gs[0]), uint64_t(hv), uint64_t(dk), uint64_t(dv), uint64_t(len)});
    const TensorId ws = g_.add_tensor(g_.tensor(f.outputs.at(d::o)).name + ".states_ws",
                                      {static_cast<int64_t>(layout.bytes / 4)}, DType::f32,
                                      Role::workspace, f.block, false);
    const TensorId states = f.attrs.chunk_len > 0 ? f.inputs.at(d::states) : kNoTensor;
    emit(OpKind::gated_delta_rule_backward, f, index,
         {{"dout", upstream(f.outputs.at(d::o))},
          {"q", f.inputs.at(d::q)},
          {"k", f.inputs.at(d::k)},
          {"v", f.inputs.at(d::v)},
          {"g", f.inputs.at(d::g)},
          {"beta", f.inputs.at(d::beta)},
          {"states", states}},
         {{"dq", f.inputs.at(d::q)},
          {"dk", f.inputs.at(d::k)},
          {"dv", f.inputs.at(d::v)},
          {"dg", f.inputs.at(d::g)},
          {"dbeta", f.inputs.at(d::beta)}},
         false, {{"workspace", ws}});
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
      a.inputs = named_operands(OpKind::adamw, false,
                                {{"param", p.id},
                                 {"grad", g_.parameter_grads[i]},
                                 {"m", m},
                                 {"v", v},
                                 {"grad_norm", norm}});
      a.outputs = named_operands(OpKind::adamw, true, {{"param", p.id}, {"m", m}, {"v", v}});
      a.attrs.weight_decay = p.shape.size() == 2;
      a.attrs.accumulate = {0, 0, 0};
      estimate_op_work(g_, a);
      g_.optimizer_ops.push_back(g_.add_op(std::move(a)));
    }
  }

  Graph& g_;
  std::unordered_set<TensorId> frozen_;  // Graph::frozen
  std::unordered_map<TensorId, TensorId> grad_of_;
  std::unordered_set<TensorId> written_;
  std::unordered_set<TensorId> partly_written_;        // gradients written in parts (write_slice)
  std::set<std::pair<TensorId, int>> slices_written_;  // (gradient, slice offset) written
  ForwardIndex fwd_;                                   // the forward ops, before autodiff adds any
};

}  // namespace

int in_place_gradient_offset(const Graph& graph, const Op& op, std::size_t slot) {
  const int at = op.attrs.slice_offset;
  switch (op.kind) {
    case OpKind::l2norm_backward:
      return slot == slot::l2norm_backward::dx ? at : -1;
    case OpKind::sigmoid_gate_backward:
      return slot == slot::sigmoid_gate_backward::dgate ? at : -1;
    case OpKind::gated_delta_rule_backward:
      return slot == slot::gated_delta_rule_backward::dv ? at : -1;
    case OpKind::rmsnorm_backward: {
      // x wider than y: rows read in place (Qwen3.5's q from q_proj's [q | gate] per head).
      namespace r = slot::rmsnorm_backward;
      const bool sliced = graph.tensor(op.inputs.at(r::x)).shape.back() !=
                          graph.tensor(op.inputs.at(r::dy)).shape.back();
      return slot == r::dx && sliced ? at : -1;
    }
    default:
      return -1;
  }
}

void autodiff(Graph& graph) {
  Differentiator(graph).run();
}

Graph build_training_gpt(const ModelConfig& config, const TrainShape& shape, const LoraSpec& lora) {
  if (config.arch != Architecture::gpt2) build_gpt(config, shape);  // its refusal, word for word
  return build_training_model(config, shape, lora);
}

}  // namespace remat
