// Push-constant blocks of the matmul backward kernels (shared by GLSL and C++, see
// push_constants.h for why every member is a 32-bit scalar).
#ifndef REMAT_MATMUL_BACKWARD_PARAMS_H
#define REMAT_MATMUL_BACKWARD_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Backward of out[M,N] = inp[M,K] * W + bias[N] (matmul_forward.comp).
//   matmul_backward_input.comp:  dinp[M,K]  (+)= dout[M,N] * W^T
//   matmul_backward_weight.comp: dW          (+)= inp^T * dout, stored in W's layout
//   matmul_backward_bias.comp:   dbias[N]    (+)= sum over m of dout[m,:]
// w_layout 0: W stored [K,N] (in, out; HF Conv1D). 1: W stored [N,K] (out, in).
// accumulate 0: overwrite the gradient; 1: add onto it (docs/ops.md); 2 (dinp only): continue
// the sum already there, i.e. start the reduction over n from dinp instead of 0. A weight too
// large for one binding is bound in pieces of its rows (n): the first piece's dinp dispatch
// overwrites or adds, later ones continue. That keeps the unsplit kernel's order of FMAs, so an
// overwritten dinp has the unsplit bits (an accumulated one differs by rounding).
// dout is columns [n_offset, n_offset + N) of a row-major matrix with rows ld_dout floats apart
// (a piece's columns of the whole dout); a whole matmul has ld_dout = N, n_offset = 0.
// matmul_backward_bias.comp reads whole rows of dout (ld_dout = N, n_offset = 0) only.
struct MatmulBackwardParams {
  uint M;
  uint N;
  uint K;
  uint w_layout;
  uint accumulate;
  uint ld_dout;
  uint n_offset;
};
REMAT_PUSH_WORDS(MatmulBackwardParams, 7)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_MATMUL_BACKWARD_PARAMS_H
