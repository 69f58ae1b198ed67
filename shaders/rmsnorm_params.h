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
// offsets from 1.
struct RmsnormParams {
  uint rows;
  uint C;
  float eps;         // 1e-5 or 1e-6 in the Llama family
  uint unit_offset;  // 0: gain w; 1: gain 1 + w
};
REMAT_PUSH_WORDS(RmsnormParams, 4)

// dx[rows,C], dw[C] from dy, x, w, rstd. Each accumulate flag: 0 overwrite, 1 add.
struct RmsnormBackwardParams {
  uint rows;
  uint C;
  uint accumulate_dx;
  uint accumulate_dw;
  uint unit_offset;  // as the forward's
};
REMAT_PUSH_WORDS(RmsnormBackwardParams, 5)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_RMSNORM_PARAMS_H
