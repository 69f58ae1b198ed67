// Push constants of dequantize_blocks.comp, shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_DEQUANTIZE_BLOCKS_PARAMS_H
#define REMAT_DEQUANTIZE_BLOCKS_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// y[i] = value i of the row of blocks in the block buffer, for i < count (a whole number of
// blocks). Each invocation decodes `run` consecutive values: 1 through gguf_row_value, 4 through
// gguf_row_run4, 8 through gguf_row_run8, 16 through gguf_row_run16 (gguf_blocks.glsl); the same
// floats either way.
struct DequantizeBlocksParams {
  uint count;
  uint run;
};
REMAT_PUSH_WORDS(DequantizeBlocksParams, 2)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_DEQUANTIZE_BLOCKS_PARAMS_H
