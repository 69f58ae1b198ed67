#include "planner/session_plan.h"

#include "planner/loss_chunk.h"
#include "planner/memory_budget.h"

namespace remat {

int session_loss_chunk(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                       const SessionPlanRequest& r) {
  if (!r.choose_loss_chunk) return shape.loss_chunk;
  // A fixed policy's arena cap is a check, not a budget to plan into: only auto plans for it.
  const bool automatic = r.policy.kind == Policy::Kind::automatic;
  return default_loss_chunk(model, shape, lora, automatic ? r.arena_budget : std::nullopt,
                            r.alignment, r.costs, r.max_binding_bytes, r.allocation);
}

SessionPlan plan_session(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                         const SessionPlanRequest& r) {
  if (r.memory_budget) {
    MemoryPlan m = plan_memory(model, shape, lora,
                               {*r.memory_budget, r.policy, r.arena_budget, r.choose_loss_chunk,
                                r.alignment, r.max_binding_bytes, r.costs, r.allocation});
    return {std::move(m.plan), m.shape};
  }
  TrainShape s = shape;
  s.loss_chunk = session_loss_chunk(model, shape, lora, r);
  return {plan(model, s, r.policy, r.arena_budget, r.alignment, r.costs, lora, r.allocation), s};
}

}  // namespace remat
