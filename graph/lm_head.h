// The LM head and its loss, shared by every model family: logits = x · Wᵀ over the vocabulary,
// then the per-row cross-entropy. Either as two ops over the whole [B·T, V] logits (sampling
// reads them), or as one head_loss op over row chunks whose logits exist one chunk at a time:
// at GPT-2's vocabulary the logits and their gradient are most of a step's activation memory,
// and no checkpoint can remove them.
#pragma once

#include "graph/block_emitter.h"
#include "graph/graph.h"
#include "graph/model_config.h"

namespace remat {

// Appends the head's logits and loss ops to the emitter's block, reading normalised x[BT,C] and
// weight [V,C] (nn.Linear layout; the tied embedding is read as is) and writing Graph::losses.
// With shape.loss_chunk 0 it sets Graph::logits; otherwise Graph::logits stays kNoTensor.
void emit_lm_head(Graph& g, BlockEmitter& e, const TrainShape& shape, TensorId x, TensorId weight);

// Rows per chunk for `loss_chunk` over `rows` rows: 0 (unchunked) stays 0, anything at least
// `rows` is one chunk of `rows`.
int lm_head_chunk_rows(int loss_chunk, int rows);

}  // namespace remat
