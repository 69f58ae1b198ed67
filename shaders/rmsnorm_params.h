// Push constants of the RMSNorm kernels (rmsnorm_forward*.comp, rmsnorm_backward*.comp), shared
// by GLSL and C++ like push_constants.h.
#ifndef REMAT_RMSNORM_PARAMS_H
#define REMAT_RMSNORM_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// y[rows,C] = x * rstd * gain, rstd = 1/sqrt(mean(x^2) + eps), and rstd[rows] for the backward.
// The gain is w, or 1 + w (formed in fp32) with unit_offset: Gemma stores its norm weights as
// offsets from 1. x's rows start x_stride floats apart (C when dense; Qwen3.5's q rows sit in
// q_proj's output every 2C floats, its gate half between them).
struct RmsnormParams {
  uint rows;
  uint C;
  float eps;         // 1e-5 or 1e-6 in the Llama family
  uint unit_offset;  // 0: gain w; 1: gain 1 + w
  uint x_stride;
};
REMAT_PUSH_WORDS(RmsnormParams, 5)

// dx[rows,C], dw[C] from dy, x, w, rstd. Each accumulate flag: 0 overwrite, 1 add. x and dx
// rows x_stride floats apart, dy's dense.
struct RmsnormBackwardParams {
  uint rows;
  uint C;
  uint accumulate_dx;
  uint accumulate_dw;
  uint unit_offset;  // as the forward's
  uint x_stride;
};
REMAT_PUSH_WORDS(RmsnormBackwardParams, 6)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_RMSNORM_PARAMS_H
