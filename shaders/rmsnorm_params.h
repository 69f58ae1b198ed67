// Push constants of the RMSNorm kernels (rmsnorm_forward*.comp, rmsnorm_backward*.comp), shared
// by GLSL and C++ like push_constants.h.
#ifndef REMAT_RMSNORM_PARAMS_H
#define REMAT_RMSNORM_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// y[rows,C] = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps), and rstd[rows] for the backward.
struct RmsnormParams {
  uint rows;
  uint C;
  float eps;  // 1e-5 or 1e-6 in the Llama family
};
REMAT_PUSH_WORDS(RmsnormParams, 3)

// dx[rows,C], dw[C] from dy, x, w, rstd. Each accumulate flag: 0 overwrite, 1 add.
struct RmsnormBackwardParams {
  uint rows;
  uint C;
  uint accumulate_dx;
  uint accumulate_dw;
};
REMAT_PUSH_WORDS(RmsnormBackwardParams, 4)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_RMSNORM_PARAMS_H
