// Reverse-mode autodiff over the block chain: one backward rule per forward op kind, no
// model-specific code. Backward ops run block by block in reverse, each block's ops in reverse;
// the first contribution to a gradient in that order overwrites, later ones accumulate
// (docs/ops.md). Every checkpoint policy keeps this order, so gradients are bit-identical.
#pragma once

#include <cstddef>

#include "graph/graph.h"
#include "graph/lora.h"
#include "graph/model_config.h"

namespace remat {

// Appends the backward ops (Block::backward_ops), gradient tensors, AdamW moments and the
// optimizer ops (one grad_norm, then one adamw per parameter) to a forward graph.
void autodiff(Graph& graph);

// Where a backward op writes its output `slot` when that gradient's forward input was read in
// place from a wider tensor (OpAttrs::slice_offset: l2norm's dx, sigmoid_gate's dgate, the delta
// rule's dv, a sliced rmsnorm's dx): the slice offset, each part's first write overwriting it
// alone; -1 for a whole-tensor write. Autodiff sets accumulate flags by it and the planner's
// checker verifies them by it.
int in_place_gradient_offset(const Graph& graph, const Op& op, std::size_t slot);

// build_gpt (+ apply_lora when lora.enabled()) + autodiff.
Graph build_training_gpt(const ModelConfig& config, const TrainShape& shape,
                         const LoraSpec& lora = {});

}  // namespace remat
