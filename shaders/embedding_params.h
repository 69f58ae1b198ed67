// Push constants of the embedding kernels (embedding_forward.comp, embedding_backward.comp),
// shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_EMBEDDING_PARAMS_H
#define REMAT_EMBEDDING_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// x[BT,C] = wte[token] + wpe[t], or wte[token] alone when positions is 0 (the Llama family's
// token embedding; wpe is then a stand-in binding, never read). The wte binding may hold only
// vocabulary rows [vocab_begin, vocab_begin + vocab_count) (GPT-2's wte exceeds a 128 MiB binding
// limit); each such piece is its own dispatch and writes only the positions whose token it holds.
struct EmbeddingParams {
  uint rows;  // BT
  uint T;     // positions per sequence: row r is position r % T
  uint C;
  uint V;  // whole vocabulary; tokens >= V give NaN rows (written by the last piece)
  uint vocab_begin;
  uint vocab_count;
  uint positions;  // 1: add wpe[t]; 0: no position table
  uint packed;     // 1: t is row_positions[r] (packed rows, binding 4); 0: t = r % T
  float scale;     // without positions: x = wte[token] * scale (Gemma: sqrt(C); 1 is exact)
};
REMAT_PUSH_WORDS(EmbeddingParams, 9)

// dwte[V,C] and dwpe[ctx,C] from dx[BT,C]; wte may be bound in vocabulary pieces as above.
// Without a position table the dispatch has no dwpe invocations (its binding is a stand-in).
struct EmbeddingBackwardParams {
  uint rows;  // BT
  uint T;
  uint C;
  uint ctx;  // rows of wpe; rows >= T get no gradient
  uint vocab_begin;
  uint vocab_count;
  uint accumulate_wte;  // 0 overwrite (rows without tokens become 0), 1 add
  uint accumulate_wpe;
  uint packed;  // 1: row r adds to dwpe[row_positions[r]] (binding 4); 0: to dwpe[r % T]
  float scale;  // dwte gets dx * scale (the forward's scale; 1 with a position table)
};
REMAT_PUSH_WORDS(EmbeddingBackwardParams, 10)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_EMBEDDING_PARAMS_H
