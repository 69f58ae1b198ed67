#include "planner/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace remat {
namespace {

class Lowering {
 public:
  explicit Lowering(const Graph& g)
      : g_(g), held_(g.tensors.size(), kNoTensor), ran_(g.blocks.size()) {
    s_.tensors = g.tensors;
    for (const Tensor& t : g.tensors) s_.original.push_back(t.id);
  }

  Schedule run(const std::vector<Action>& actions) {
    for (const Action& a : actions) a.forward ? forward(a) : backward(a.block);
    for (int op : g_.optimizer_ops) emit(op, Phase::optimizer, false);
    return std::move(s_);
  }

 private:
  // Values that are recomputable: activations produced by a block (not the persistent loss).
  bool versioned(TensorId t) const {
    const Tensor& x = g_.tensor(t);
    return x.role == Role::activation && !x.persistent;
  }
  TensorId resolve(TensorId t) const {
    if (!versioned(t)) return t;
    const TensorId v = held_[static_cast<size_t>(t)];
    if (v == kNoTensor)
      throw std::logic_error("schedule: " + g_.tensor(t).name + " is read but not held");
    return v;
  }
  TensorId new_version(TensorId t) {
    const int n = ++versions_[t];
    Tensor copy = g_.tensor(t);
    copy.id = static_cast<TensorId>(s_.tensors.size());
    copy.name += n == 1 ? "@recompute" : "@recompute" + std::to_string(n);
    s_.tensors.push_back(copy);
    s_.original.push_back(t);
    return copy.id;
  }

  void emit(int op_index, Phase phase, bool fresh) {
    const Op& op = g_.ops[static_cast<size_t>(op_index)];
    Step st;
    st.kind = op.kind;
    st.attrs = op.attrs;
    st.phase = phase;
    st.block = op.block;
    st.source_op = op_index;
    st.flops = op.flops;
    st.bytes = op.bytes;
    for (TensorId t : op.inputs) st.inputs.push_back(resolve(t));
    for (TensorId t : op.outputs) {
      // A forward op's workspace (the delta rule's chunkwise scratch) lives during its op alone:
      // rerun, it is a tensor of its own, or the forward's would stay live until the recompute.
      if (fresh && phase == Phase::recompute && g_.tensor(t).role == Role::workspace) {
        st.outputs.push_back(new_version(t));
        continue;
      }
      if (!versioned(t)) {
        if (fresh && g_.tensor(t).persistent && phase == Phase::recompute)
          throw std::logic_error("schedule: recompute would rewrite " + g_.tensor(t).name);
        st.outputs.push_back(t);
        continue;
      }
      const TensorId v = fresh ? new_version(t) : t;
      held_[static_cast<size_t>(t)] = v;
      st.outputs.push_back(v);
    }
    s_.steps.push_back(std::move(st));
  }

  void forward(const Action& a) {
    const Block& b = g_.blocks.at(static_cast<size_t>(a.block));
    const bool first = !ran_[static_cast<size_t>(a.block)];
    ran_[static_cast<size_t>(a.block)] = true;
    for (int op : b.forward_ops) emit(op, first ? Phase::forward : Phase::recompute, !first);
    const auto keep = kept_tensors(g_, a.block, a.level);
    for (int op : b.forward_ops)
      for (TensorId t : g_.ops[static_cast<size_t>(op)].outputs)
        if (versioned(t) && t != b.output && !keep.count(t))
          held_[static_cast<size_t>(t)] = kNoTensor;
    if (b.input != kNoTensor && !a.keep_input && !keep.count(b.input))
      held_[static_cast<size_t>(b.input)] = kNoTensor;
  }

  void backward(int block) {
    const Block& b = g_.blocks.at(static_cast<size_t>(block));
    recompute_for(b);
    for (int op : b.backward_ops) emit(op, Phase::backward, false);
    for (int op : b.forward_ops)
      for (TensorId t : g_.ops[static_cast<size_t>(op)].outputs)
        if (versioned(t)) held_[static_cast<size_t>(t)] = kNoTensor;
    if (b.input != kNoTensor) held_[static_cast<size_t>(b.input)] = kNoTensor;
  }

  // Reruns, in forward order, exactly the block's forward ops whose outputs the backward needs
  // and that are not held (transitively), starting from what is held.
  void recompute_for(const Block& b) {
    std::unordered_set<TensorId> need;
    for (int op : b.backward_ops)
      for (TensorId t : g_.ops[static_cast<size_t>(op)].inputs)
        if (versioned(t) && held_[static_cast<size_t>(t)] == kNoTensor) need.insert(t);
    std::vector<int> rerun;
    for (auto it = b.forward_ops.rbegin(); it != b.forward_ops.rend(); ++it) {
      const Op& op = g_.ops[static_cast<size_t>(*it)];
      const bool needed = std::any_of(op.outputs.begin(), op.outputs.end(),
                                      [&](TensorId t) { return need.count(t) > 0; });
      if (!needed) continue;
      rerun.push_back(*it);
      for (TensorId t : op.inputs)
        if (versioned(t) && held_[static_cast<size_t>(t)] == kNoTensor) need.insert(t);
    }
    for (auto it = rerun.rbegin(); it != rerun.rend(); ++it) emit(*it, Phase::recompute, true);
  }

  const Graph& g_;
  Schedule s_;
  std::vector<TensorId> held_;  // graph tensor -> the version currently available, or none
  std::vector<bool> ran_;       // block -> its forward has run once (later runs are recomputes)
  std::unordered_map<TensorId, int> versions_;  // recompute versions made per graph tensor
};

// A residual adding two matmul outputs (a LoRA merge, graph/lora.h) counts as a matmul for the
// selective level: keeping the sum lets both matmul outputs go, while keeping them would hold two
// tensors of the sum's size to save one cheap add.
bool merges_matmuls(const Graph& g, const Op& op, const std::vector<int>& producers) {
  if (op.kind != OpKind::residual) return false;
  for (TensorId t : op.inputs) {
    const int p = producers[static_cast<size_t>(t)];
    if (p < 0 || g.ops[static_cast<size_t>(p)].kind != OpKind::matmul) return false;
  }
  return true;
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::forward:
      return "forward";
    case Phase::recompute:
      return "recompute";
    case Phase::backward:
      return "backward";
    case Phase::optimizer:
      return "optimizer";
  }
  return "?";
}

std::unordered_set<TensorId> kept_tensors(const Graph& graph, int block, KeepLevel level) {
  std::unordered_set<TensorId> keep;
  if (level == KeepLevel::none) return keep;
  const std::vector<int> producers = graph.first_producers();
  const Block& b = graph.blocks.at(static_cast<size_t>(block));
  if (b.input != kNoTensor) keep.insert(b.input);
  for (int i : b.forward_ops) {
    const Op& op = graph.ops[static_cast<size_t>(i)];
    // The delta rule's states and output come from a sequential pass over T: kept like
    // attention's, never recomputed for the selective level.
    const bool expensive =
        op.kind == OpKind::matmul || op.kind == OpKind::attention ||
        op.kind == OpKind::gqa_attention || op.kind == OpKind::gated_delta_state ||
        op.kind == OpKind::gated_delta_rule || merges_matmuls(graph, op, producers);
    if (level == KeepLevel::all || expensive)
      for (TensorId t : op.outputs) keep.insert(t);
  }
  return keep;
}

Schedule build_schedule(const Graph& graph, const std::vector<Action>& actions) {
  return Lowering(graph).run(actions);
}

}  // namespace remat
