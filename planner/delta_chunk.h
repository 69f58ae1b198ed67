// Choosing Qwen3.5's delta-rule chunk length (TrainShape::delta_chunk, docs/DESIGN.md 'The delta
// rule under the planner'). Shorter chunks keep more chunk-start states; longer ones need a
// larger backward workspace (one chunk's states). Every length gives the same bits, so the choice
// is only about memory and time: each candidate is planned as the session would plan it and the
// best kept.
#pragma once

#include <vector>

#include "graph/lora.h"
#include "graph/model_config.h"
#include "planner/session_plan.h"

namespace remat {

// The lengths tried for a sequence of T tokens: T itself (0, one chunk) and the powers of two
// from 64 below T, longest first: multiples of the chunkwise kernels' block
// (graph/delta_rule_workspace.h), so each chunk starts at a block.
std::vector<int> delta_chunk_candidates(int seq);

// Whether the chunk length's state tensor and each part of its forward and backward workspaces
// (graph/delta_rule_workspace.h) fit one storage-buffer binding of max_binding_bytes (0: no limit).
bool delta_chunk_fits_binding(const ModelConfig& model, const TrainShape& shape, int chunk,
                              uint64_t max_binding_bytes);

// plan_session at every candidate that fits the binding limit and request.max_delta_steps: under a
// budget (arena or memory) the fastest plan by the cost model, ties to the smaller arena; without
// one the smallest arena, ties to the faster. shape.delta_chunk is ignored; the result's shape
// carries the choice. A model without Gated DeltaNet layers is planned as given.
// When no candidate can be planned: under a budget every length misses, BudgetBelowMinimum with
// the smallest minimum over the lengths (the message of that length, naming it); else
// std::invalid_argument with the message of the last one tried.
SessionPlan plan_session_choosing_delta_chunk(const ModelConfig& model, const TrainShape& shape,
                                              const LoraSpec& lora,
                                              const SessionPlanRequest& request);

}  // namespace remat
