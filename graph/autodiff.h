// Reverse-mode autodiff over the block chain: one backward rule per forward op kind, no
// model-specific code. Backward ops run block by block in reverse, each block's ops in reverse;
// the first contribution to a gradient in that order overwrites, later ones accumulate
// (docs/ops.md). Every checkpoint policy keeps this order, so gradients are bit-identical.
#pragma once

#include "graph/graph.h"
#include "graph/lora.h"
#include "graph/model_config.h"

namespace remat {

// Appends the backward ops (Block::backward_ops), gradient tensors, AdamW moments and the
// optimizer ops (one grad_norm, then one adamw per parameter) to a forward graph.
void autodiff(Graph& graph);

// build_gpt (+ apply_lora when lora.enabled()) + autodiff.
Graph build_training_gpt(const ModelConfig& config, const TrainShape& shape,
                         const LoraSpec& lora = {});

}  // namespace remat
