// Push constants of the causal depthwise conv1d kernels (causal_conv1d_*.comp), shared by GLSL
// and C++ like push_constants.h.
#ifndef REMAT_CAUSAL_CONV1D_PARAMS_H
#define REMAT_CAUSAL_CONV1D_PARAMS_H

#include "push_constants.h"

// causal_conv1d_backward_weight.comp's workgroup size: a constant of the kernel, not a device
// choice, because it decides dw's summation order. MAX_TAPS bounds K (the register windows).
// The forward and dx kernels walk CHUNK consecutive tokens of one channel per invocation.
#define CAUSAL_CONV1D_WEIGHT_GROUP 64
#define CAUSAL_CONV1D_MAX_TAPS 8
#define CAUSAL_CONV1D_CHUNK 64

#ifdef __cplusplus
namespace remat::push {
#endif

// x, y [rows, T, C]; w [C, K]; positions [rows, T] u32 when has_positions.
// y[r,t,c] = silu(sum_k w[c,k] x[r, t - (K-1) + k, c]) over the taps inside the token's example
// (at or after position 0 of its row, or of its example in a packed row).
// Backward: dx and dw from dy (each accumulate flag: 0 overwrite, 1 add).
struct CausalConv1dParams {
  uint rows;
  uint T;
  uint C;
  uint K;
  uint has_positions;  // 0: the window starts at t = 0 of each row; 1: at t - positions[r,t]
  uint accumulate;     // backward only: how dx (backward_input) or dw (backward_weight) is written
};
REMAT_PUSH_WORDS(CausalConv1dParams, 6)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_CAUSAL_CONV1D_PARAMS_H
