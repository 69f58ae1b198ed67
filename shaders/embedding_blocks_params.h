// Push constants of embedding_blocks.comp, shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_EMBEDDING_BLOCKS_PARAMS_H
#define REMAT_EMBEDDING_BLOCKS_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// x[BT,C] = row tokens[r] of a table [V, C] kept in a ggml block type (a QLoRA base's token
// embedding), decoded, then as embedding_forward does it on f32 tables (EmbeddingParams): plus
// wpe[t] (GPT-2's position table, f32) when positions is 1, else times scale (Gemma: sqrt(C); 1 is
// exact). Each row is C values in whole blocks, row_bytes bytes, the rows packed. The binding
// holds rows [vocab_begin, vocab_begin + vocab_count) only (a large table is bound in pieces of
// whole rows); each piece is its own dispatch and writes only the positions whose token it holds.
// Tokens >= V give NaN rows, written by the last piece.
struct EmbeddingBlocksParams {
  uint rows;  // BT
  uint T;     // positions per sequence: row r is position r % T
  uint C;
  uint V;
  uint row_bytes;
  uint vocab_begin;
  uint vocab_count;
  uint positions;  // 1: add wpe[t] (binding 2); 0: no position table, multiply by scale
  uint packed;     // 1: t is row_positions[r] (packed rows, binding 4); 0: t = r % T
  float scale;     // without positions: x = decoded · scale
};
REMAT_PUSH_WORDS(EmbeddingBlocksParams, 10)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_EMBEDDING_BLOCKS_PARAMS_H
