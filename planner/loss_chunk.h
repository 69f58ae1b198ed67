// Choosing the LM head's loss chunk (TrainShape::loss_chunk): the whole logits when they fit
// (fewest dispatches, no recomputed logits), else the largest chunk that does, so the rest of the
// budget buys as little recomputation as possible. "Fit" means one storage-buffer binding, since
// the head's kernels bind a chunk's [rows, V] logits whole, and under an arena budget the
// smallest plan too.
#pragma once

#include <cstdint>
#include <optional>

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

// The loss chunk a session given no chunk plans with (--loss-chunk auto, and the default):
// choose_loss_chunk for `auto_arena` (an arena budget the auto policy plans into), else
// binding_loss_chunk. The rule of both: whole logits where they fit, else the largest chunk.
// Under `allocation` limits the logits must also fit one allocation page.
int default_loss_chunk(const ModelConfig& model, const TrainShape& shape, const LoraSpec& lora,
                       std::optional<uint64_t> auto_arena, uint64_t alignment,
                       const CostModel* costs, uint64_t max_binding_bytes,
                       const AllocationLimits& allocation = {});

// Without a budget: 0 (whole logits) when the [B*T, V] f32 logits fit one binding of
// max_binding_bytes (0: no limit), else the largest multiple of kLossChunkAlign rows whose
// logits do. std::invalid_argument naming the vocabulary when not even kLossChunkAlign rows fit.
int binding_loss_chunk(const ModelConfig& model, const TrainShape& shape,
                       uint64_t max_binding_bytes);

// The largest multiple of kLossChunkAlign rows whose [rows, V] f32 logits fit one binding of
// max_binding_bytes (> 0); 0 when not even kLossChunkAlign rows fit.
int largest_binding_chunk(const ModelConfig& model, uint64_t max_binding_bytes);

// Whether the logits of `chunk` rows (0: the whole B*T) of `model`'s vocabulary fit one binding
// of max_binding_bytes (0: no limit).
bool logits_fit_binding(const ModelConfig& model, const TrainShape& shape, int chunk,
                        uint64_t max_binding_bytes);

}  // namespace remat
