// Builds the forward graph of a GPT-2 style model as a chain of blocks:
// embedding -> transformer blocks -> final LayerNorm + tied head + cross-entropy.
// The chain builder takes heterogeneous blocks (attention and/or MLP, own head count and MLP
// width), so tests can generate random chains with the same code that builds GPT-2.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "graph/model_config.h"

namespace remat {

// One transformer block's shape. GPT-2 is {true, true, heads, 4*dim}.
struct BlockSpec {
  bool attention = true;  // ln_1, c_attn, attention, c_proj (+dropout), residual
  bool mlp = true;        // ln_2, c_fc, gelu, c_proj (+dropout), residual
  int heads = 1;          // attention heads; must divide dim
  int hidden = 4;         // MLP width
};

// A chain: the residual stream width is shared, the blocks may differ.
struct ChainSpec {
  int dim = 128;                  // residual stream width C
  int vocab = 256;                // vocabulary V (tied embedding and head)
  int ctx = 64;                   // rows of the position embedding
  std::vector<BlockSpec> blocks;  // transformer blocks, in order
};

// Forward graph only; run autodiff() to get the training graph.
Graph build_chain(const ChainSpec& spec, const TrainShape& shape);
// GPT-2: validates config and shape (std::invalid_argument) and builds the chain.
Graph build_gpt(const ModelConfig& config, const TrainShape& shape);

}  // namespace remat
