// What a plan costs, in the terms a user asks about: bytes by category, which checkpoints were
// chosen, FLOPs by phase, predicted step time relative to storing everything, and the textbook
// estimate beside it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/cost_model.h"
#include "graph/graph.h"
#include "planner/analytic.h"
#include "planner/liveness.h"
#include "planner/schedule.h"
#include "planner/strategy.h"

namespace remat {

struct Report {
  uint64_t parameter_bytes = 0;         // persistent: parameters
  uint64_t grad_bytes = 0;              // persistent: parameter gradients
  uint64_t adam_bytes = 0;              // persistent: AdamW m and v
  uint64_t io_bytes = 0;                // persistent: tokens, targets, losses
  uint64_t saved_activation_bytes = 0;  // arena at the peak step: activations from the forward pass
  uint64_t recompute_bytes = 0;         // arena at the peak step: recomputed activations
  uint64_t grads_in_flight_bytes = 0;   // arena at the peak step: activation gradients
  uint64_t workspace_bytes = 0;         // arena at the peak step: kernel workspaces
  std::vector<std::string> checkpoints;      // blocks whose input is kept as a segment checkpoint
  std::vector<int> checkpoint_blocks;        // their indices in Graph::blocks (parallel)
  std::vector<TensorId> checkpoint_tensors;  // the kept block inputs (parallel)
  std::vector<std::string> stored_blocks;    // blocks kept at level all/selective in the first pass
  int nesting_depth = 0;            // 0: no segments, 1: single-level, 2+: nested recompute
  double forward_flops = 0;         // first forward pass
  double backward_flops = 0;        // backward pass
  double recompute_flops = 0;       // forward ops run again
  double optimizer_flops = 0;       // grad norm + AdamW
  double predicted_seconds = 0;     // sum of the cost model over the schedule
  double baseline_seconds = 0;      // the same with no recompute (policy none)
  double predicted_step_ratio = 1;  // predicted / baseline
  AnalyticEstimate analytic;        // textbook numbers for the same shape
  // Qwen3.5's delta rule (docs/DESIGN.md, 'The delta rule under the planner'): tokens per chunk
  // (0: no recurrence; the sequence length when it runs as one chunk), the chunk-start states of
  // every layer together, and how many layers' states the plan recomputes rather than keeps.
  int delta_chunk = 0;
  uint64_t delta_state_bytes = 0;
  int delta_state_layers = 0;
  int delta_states_recomputed = 0;
};

Report make_report(const Graph& graph, const Strategy& strategy, const Schedule& schedule,
                   const Liveness& liveness, uint64_t alignment, const CostModel& costs);

// Predicted seconds of the whole step with no recompute.
double baseline_seconds(const Graph& graph, const CostModel& costs);

}  // namespace remat
