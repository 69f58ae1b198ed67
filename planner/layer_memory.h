// What one transformer block keeps for its backward when nothing is recomputed, and what frozen
// weights save there: a frozen weight's backward computes dx only, so the input that only its
// weight gradient reads (the GELU output under mlp.c_proj, say) need not be kept. `remat plan`
// prints both next to full fine-tuning.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace remat {

struct LayerActivationBytes {
  uint64_t saved = 0;  // activations the block's forward produces and its backward reads
  uint64_t frozen_weight_inputs = 0;  // more it would keep if frozen weights got gradients
};

// Aligned bytes, block input and output (the chain's checkpoints) not counted.
LayerActivationBytes layer_activation_bytes(const Graph& training_graph, int block,
                                            uint64_t alignment);

}  // namespace remat
