// The static schedule: the strategy's actions lowered to concrete op steps over concrete tensors.
// A recomputed value is a new tensor (name suffix "@recompute", "@recompute2", ...) with its own
// lifetime, so a dropped activation reserves no arena space between its forward and its
// recompute. Backward steps appear in the same order under every strategy.
#pragma once

#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "planner/strategy.h"

namespace remat {

enum class Phase { forward, recompute, backward, optimizer };
const char* phase_name(Phase p);

struct Step {
  OpKind kind = OpKind::embedding;  // kernel family
  std::vector<TensorId> inputs;     // schedule tensor ids (recompute versions included)
  std::vector<TensorId> outputs;    // schedule tensor ids
  OpAttrs attrs;                    // copied from the graph op (dropout id, accumulate, ...)
  Phase phase = Phase::forward;     // why this step runs
  int block = -1;                   // chain block (-1: optimizer)
  int source_op = -1;               // index of the graph op this step executes
  double flops = 0;                 // from the graph op
  double bytes = 0;                 // from the graph op
};

struct Schedule {
  std::vector<Tensor> tensors;     // graph tensors first (same ids), then recompute versions
  std::vector<TensorId> original;  // per tensor: the graph tensor it holds a value of
  std::vector<Step> steps;         // execution order
};

// What block `block`'s forward keeps at `level` (besides its chain output). Depends only on the
// graph, so the DP's block costs and the schedule agree.
std::unordered_set<TensorId> kept_tensors(const Graph& graph, int block, KeepLevel level);

// Lowers actions to steps, then appends the optimizer. Throws std::logic_error when the actions
// read a value they never made available (a broken strategy, never user input).
Schedule build_schedule(const Graph& graph, const std::vector<Action>& actions);

}  // namespace remat
