// What a training session plans, decided once for every caller: under a whole-memory budget the
// memory planner (planner/memory_budget.h), else the arena planner, with a loss chunk the caller
// left to the planner chosen on the way (planner/loss_chunk.h). runtime/session plans with its
// device's alignment and binding limit; planning without a device (`remat plan`, the C API's
// remat_plan) with 256 bytes and the smallest binding limit Vulkan allows.
#pragma once

#include <cstdint>
#include <optional>

#include "graph/cost_model.h"
#include "graph/lora.h"
#include "graph/model_config.h"
#include "planner/allocation_pages.h"
#include "planner/plan.h"
#include "planner/policy.h"
#include "planner/session_extras.h"

namespace remat {

struct SessionPlanRequest {
  Policy policy;                          // auto needs a budget
  std::optional<uint64_t> arena_budget;   // arena bytes the plan must fit
  std::optional<uint64_t> memory_budget;  // device bytes of the whole session
  // Choose shape.loss_chunk rather than take it: under memory_budget with the rest of the plan,
  // else default_loss_chunk (for arena_budget under auto, else for the binding limit).
  bool choose_loss_chunk = false;
  uint64_t alignment = 256;                            // the device's binding alignment
  uint64_t max_binding_bytes = kSmallestBindingLimit;  // the device's maxStorageBufferRange
  const CostModel* costs = nullptr;                    // measured kernel costs, or the default
  AllocationLimits allocation;  // the device's maxMemoryAllocationSize and count (0: no limit)
  // The most delta-rule steps the device runs in one chunkwise call, forward or backward
  // (llvmpipe caps an invocation's loop iterations; runtime/kernels/gated_delta_rule_wy.h); 0: no
  // limit. Choosing a
  // chunk length (planner/delta_chunk.h) keeps within it.
  uint32_t max_delta_steps = 0;
};

struct SessionPlan {
  Plan plan;
  TrainShape shape;  // the shape planned, its loss_chunk chosen when asked
};

// The loss chunk plan_session plans with when there is no memory budget: shape.loss_chunk, or
// when the request chooses, default_loss_chunk (for arena_budget when the policy is auto).
int session_loss_chunk(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                       const SessionPlanRequest& request);

// std::invalid_argument for bad shapes and budgets below the minimum (planner/plan.h,
// planner/memory_budget.h, planner/loss_chunk.h name what to change).
SessionPlan plan_session(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                         const SessionPlanRequest& request);

}  // namespace remat
