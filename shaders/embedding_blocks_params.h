// Push constants of embedding_blocks.comp, shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_EMBEDDING_BLOCKS_PARAMS_H
#define REMAT_EMBEDDING_BLOCKS_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// x[BT,C] = row tokens[r] of a table [V, C] kept in a ggml block type (a QLoRA base's token
// embedding), decoded: each row is C values in whole blocks, row_bytes bytes, the rows packed.
// The binding holds rows [vocab_begin, vocab_begin + vocab_count) only (a large table is bound
// in pieces of whole rows); each piece is its own dispatch and writes only the positions whose
// token it holds. Tokens >= V give NaN rows, written by the last piece.
struct EmbeddingBlocksParams {
  uint rows;  // BT
  uint C;
  uint V;
  uint row_bytes;
  uint vocab_begin;
  uint vocab_count;
};
REMAT_PUSH_WORDS(EmbeddingBlocksParams, 6)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_EMBEDDING_BLOCKS_PARAMS_H
