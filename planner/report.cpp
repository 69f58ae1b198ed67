#include "planner/report.h"

#include <algorithm>
#include <set>

#include "graph/op_schema.h"

namespace remat {
namespace {

int split_depth(const Strategy& s, int node) {
  if (node < 0) return 0;
  const StrategyNode& n = s.nodes[static_cast<size_t>(node)];
  if (n.kind == StrategyNode::Kind::leaf) return 0;
  if (n.kind == StrategyNode::Kind::keep) return split_depth(s, n.first);
  // The right part C(k,t) runs at the same level; the left part C(s,k) is one level deeper.
  return std::max(split_depth(s, n.first), 1 + split_depth(s, n.second));
}

void persistent_bytes(const Graph& g, Report& r) {
  for (const Tensor& t : g.tensors) {
    if (!t.persistent) continue;
    switch (t.role) {
      case Role::parameter:
        r.parameter_bytes += t.bytes();
        break;
      case Role::parameter_grad:
        r.grad_bytes += t.bytes();
        break;
      case Role::optimizer_state:
        r.adam_bytes += t.bytes();
        break;
      default:
        r.io_bytes += t.bytes();
        break;
    }
  }
}

void peak_breakdown(const Schedule& s, const Liveness& l, uint64_t alignment, Report& r) {
  if (l.peak_step < 0) return;
  std::vector<bool> recomputed(s.tensors.size(), false);
  for (const Step& st : s.steps)
    if (st.phase == Phase::recompute)
      for (TensorId t : st.outputs) recomputed[static_cast<size_t>(t)] = true;
  for (size_t t = 0; t < s.tensors.size(); ++t) {
    const Interval& iv = l.intervals[t];
    if (!iv.used() || iv.first > l.peak_step || iv.last < l.peak_step) continue;
    const uint64_t bytes = align_up(s.tensors[t].bytes(), alignment);
    switch (s.tensors[t].role) {
      case Role::activation:
        (recomputed[t] ? r.recompute_bytes : r.saved_activation_bytes) += bytes;
        break;
      case Role::activation_grad:
        r.grads_in_flight_bytes += bytes;
        break;
      default:
        r.workspace_bytes += bytes;
        break;
    }
  }
}

}  // namespace

double baseline_seconds(const Graph& graph, const CostModel& costs) {
  double total = 0;
  for (const Op& op : graph.ops) total += costs.seconds(op);
  return total;
}

namespace {

// The delta rule's chunking as the graph has it, and which layers rerun their state pass.
void delta_states(const Graph& graph, const Schedule& schedule, Report& r) {
  for (const Op& op : graph.ops) {
    if (op.kind == OpKind::gated_delta_rule && r.delta_chunk == 0) {
      const Tensor& g = graph.tensor(op.inputs.at(slot::gated_delta_rule::g));  // [B,T,Hv]
      r.delta_chunk = op.attrs.chunk_len > 0 ? op.attrs.chunk_len : static_cast<int>(g.shape[1]);
    }
    if (op.kind != OpKind::gated_delta_state) continue;
    r.delta_state_bytes += graph.tensor(op.outputs.at(0)).bytes();
    ++r.delta_state_layers;
  }
  for (const Step& st : schedule.steps)
    if (st.phase == Phase::recompute && st.kind == OpKind::gated_delta_state)
      ++r.delta_states_recomputed;
}

}  // namespace

Report make_report(const Graph& graph, const Strategy& strategy, const Schedule& schedule,
                   const Liveness& liveness, uint64_t alignment, const CostModel& costs) {
  Report r;
  persistent_bytes(graph, r);
  peak_breakdown(schedule, liveness, alignment, r);
  std::set<int> checkpoints, stored;
  for (const Action& a : strategy_actions(strategy)) {
    const Block& b = graph.blocks[static_cast<size_t>(a.block)];
    if (a.forward && a.level == KeepLevel::none && a.keep_input && b.input != kNoTensor)
      checkpoints.insert(a.block);
  }
  // A block is "stored" when its first-pass forward keeps intermediates.
  std::vector<bool> seen(graph.blocks.size(), false);
  for (const Action& a : strategy_actions(strategy))
    if (a.forward && !seen[static_cast<size_t>(a.block)]) {
      seen[static_cast<size_t>(a.block)] = true;
      if (a.level != KeepLevel::none) stored.insert(a.block);
    }
  for (int b : checkpoints) {
    const Block& block = graph.blocks[static_cast<size_t>(b)];
    r.checkpoints.push_back(block.name);
    r.checkpoint_blocks.push_back(b);
    r.checkpoint_tensors.push_back(block.input);
  }
  for (int b : stored) r.stored_blocks.push_back(graph.blocks[static_cast<size_t>(b)].name);
  r.nesting_depth = split_depth(strategy, strategy.root);
  delta_states(graph, schedule, r);
  for (const Step& st : schedule.steps) {
    const double secs = costs.seconds(graph.ops[static_cast<size_t>(st.source_op)]);
    r.predicted_seconds += secs;
    switch (st.phase) {
      case Phase::forward:
        r.forward_flops += st.flops;
        break;
      case Phase::recompute:
        r.recompute_flops += st.flops;
        break;
      case Phase::backward:
        r.backward_flops += st.flops;
        break;
      case Phase::optimizer:
        r.optimizer_flops += st.flops;
        break;
    }
  }
  r.baseline_seconds = baseline_seconds(graph, costs);
  r.predicted_step_ratio = r.predicted_seconds / r.baseline_seconds;
  return r;
}

}  // namespace remat
