// One budget for the whole session: the persistent buffer (trained parameters, gradients, AdamW
// moments, frozen weights at their dtype, io tensors), the activation arena and the session's
// fixed extras (planner/session_extras.h). What the user's choices fix (model, LoRA, batch,
// sequence) is subtracted; activations and the LM head's loss chunk are planned into the rest at
// the least predicted time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "graph/cost_model.h"
#include "graph/lora.h"
#include "graph/model_config.h"
#include "planner/plan.h"
#include "planner/policy.h"
#include "planner/session_extras.h"

namespace remat {

struct MemoryRequest {
  uint64_t memory_budget = 0;                 // device bytes of the whole session
  Policy policy{Policy::Kind::automatic, 0};  // auto, or a fixed policy whose total must fit
  std::optional<uint64_t> arena_budget;       // an arena cap checked as well (--arena)
  bool choose_loss_chunk = false;             // pick shape.loss_chunk as --loss-chunk auto does
  uint64_t alignment = 256;                   // the device's binding alignment
  uint64_t max_binding_bytes = kSmallestBindingLimit;  // the device's maxStorageBufferRange
  const CostModel* costs = nullptr;  // measured kernel costs, or the default model
  AllocationLimits allocation;       // the device's maxMemoryAllocationSize and count
};

// A session's device bytes by part; the parts sum to total().
struct SessionMemory {
  uint64_t frozen_bytes = 0;     // frozen weights (LoRA's base model), at their dtype
  std::string frozen_dtype;      // "f32", "bf16, 1-D f32" (16-bit matrices), "mixed"; "" when none
  uint64_t trainable_bytes = 0;  // trained parameters + gradients + AdamW m and v
  uint64_t io_bytes = 0;         // tokens, targets, losses
  uint64_t page_padding = 0;     // persistent bytes skipped so no tensor crosses an allocation
  uint64_t arena_bytes = 0;      // the activation arena
  SessionExtras extras;          // staging, AdamW block, gradient-norm partials
  int loss_chunk = 0;            // the plan's loss chunk (0: whole logits)

  uint64_t persistent_bytes() const {
    return frozen_bytes + trainable_bytes + io_bytes + page_padding;
  }
  uint64_t total() const { return persistent_bytes() + arena_bytes + extras.total(); }
  // "frozen weights 474.7 MiB (f32), trainable parameters + gradients + AdamW moments 18.2 MiB,
  // activations 12.1 MiB (loss in chunks of 64 rows), io tensors 3.0 KiB, extras 0.3 MiB"
  std::string describe(const char* activations = "activations") const;
};

// The parts of a session running `plan` (whose loss chunk is `loss_chunk`).
SessionMemory session_memory(const Plan& plan, int loss_chunk, uint64_t max_binding_bytes);

struct MemoryPlan {
  Plan plan;             // fits the request
  TrainShape shape;      // the shape planned (its loss_chunk chosen when asked)
  SessionMemory memory;  // its whole-session bytes, total() <= the budget
};

// The fastest plan whose whole-session total fits request.memory_budget (and whose arena fits
// request.arena_budget, when given). A budget below minimum_memory(...).total() is
// std::invalid_argument with one line naming that minimum, its largest parts and which flags
// would lower it; an arena budget below the smallest arena is the arena's own error.
MemoryPlan plan_memory(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                       const MemoryRequest& request);

// The parts of the smallest whole-session plan: with the smallest loss chunk when the request
// may choose one, with the smallest auto arena (or the fixed policy's arena).
// request.memory_budget and request.arena_budget are not read.
SessionMemory minimum_memory(const ModelConfig& model, const TrainShape& shape,
                             const LoraSpec& lora, const MemoryRequest& request);

// "1.5 MiB", "237.0 MiB", "3.2 GiB": binary units, one decimal.
std::string format_mib(uint64_t bytes);

}  // namespace remat
