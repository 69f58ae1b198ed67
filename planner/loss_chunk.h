// Choosing the LM head's loss chunk (TrainShape::loss_chunk) for an arena budget: the whole
// logits when they fit (fewest dispatches, no recomputed logits), else the largest chunk whose
// smallest plan fits, so the rest of the budget buys as little recomputation as possible.
#pragma once

#include <cstdint>

#include "graph/cost_model.h"
#include "graph/lora.h"
#include "graph/model_config.h"
#include "planner/allocation_pages.h"

namespace remat {

// The loss chunk for `budget` arena bytes: 0 (whole logits) when `auto` fits the budget with
// them, else the largest multiple of kLossChunkAlign rows (below B*T) that fits. The minimum
// arena grows with the chunk, so the search halves the range. std::invalid_argument naming the
// smallest arena when not even one chunk of kLossChunkAlign rows fits. shape.loss_chunk is ignored.
// With `lora` enabled the plans are those of the LoRA graph (a frozen head included).
// With max_binding_bytes (0: no limit) a chunk's [rows, V] f32 logits, bound whole by the head's
// kernels, must also fit one storage-buffer binding; under `allocation` limits every tensor of
// the chunk's plan must fit one allocation.
int choose_loss_chunk(const ModelConfig& model, const TrainShape& shape, uint64_t budget,
                      uint64_t alignment = 256, const CostModel* costs = nullptr,
                      const LoraSpec& lora = {}, uint64_t max_binding_bytes = 0,
                      const AllocationLimits& allocation = {});

// Whether the logits of `chunk` rows (0: the whole B*T) of `model`'s vocabulary fit one binding
// of max_binding_bytes (0: no limit).
bool logits_fit_binding(const ModelConfig& model, const TrainShape& shape, int chunk,
                        uint64_t max_binding_bytes);

}  // namespace remat
