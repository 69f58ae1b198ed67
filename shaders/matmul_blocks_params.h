// Push constants of the block-weight matmuls (matmul_blocks_*.comp), shared by GLSL and C++ like
// push_constants.h.
#ifndef REMAT_MATMUL_BLOCKS_PARAMS_H
#define REMAT_MATMUL_BLOCKS_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// W is [N,K] (out, in) in a ggml block type: row n is the K values of n * row_bytes.. in whole
// blocks (K a multiple of the block's values), the rows packed one after another.
//   matmul_blocks_forward*.comp:        out[M,N] = inp[M,K] * W^T (+ bias[N])
//   matmul_blocks_backward_input*.comp: dinp[M,K] (+)= dout[M,N] * W
// The N-wide side (out and bias; dout) is columns [n_offset, n_offset + N) of a row-major matrix
// with rows `ld` floats apart: a piece of W's rows bound on its own (a whole matmul has ld = N,
// n_offset = 0). has_bias (forward) adds bias[n_offset + n] after the chain. accumulate
// (backward) is MatmulBackwardParams' (matmul_backward_params.h): 0 overwrite, 1 add, 2 continue
// the sum an earlier piece stored. The backward's reduction runs over rows [n_begin, N) of this
// piece (a block of the reduction, matmul_reduction_blocks.h; n_begin a multiple of 4): whole,
// n_begin = 0.
struct MatmulBlocksParams {
  uint M;
  uint N;
  uint K;
  uint row_bytes;
  uint ld;
  uint n_offset;
  uint has_bias;
  uint accumulate;
  uint n_begin;
};
REMAT_PUSH_WORDS(MatmulBlocksParams, 9)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_MATMUL_BLOCKS_PARAMS_H
