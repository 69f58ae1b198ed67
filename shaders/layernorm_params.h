// Push constants of the LayerNorm kernels (layernorm_forward.comp, layernorm_backward.comp),
// shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_LAYERNORM_PARAMS_H
#define REMAT_LAYERNORM_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// y[BT,C] = (x - mean) * rstd * w + b, and mean[BT], rstd[BT] for the backward.
struct LayernormParams {
  uint rows;  // BT
  uint C;
  float eps;  // 1e-5 for GPT-2
};
REMAT_PUSH_WORDS(LayernormParams, 3)

// dx[BT,C], dw[C], db[C] from dy, x, w, mean, rstd. Each accumulate flag: 0 overwrite, 1 add.
struct LayernormBackwardParams {
  uint rows;
  uint C;
  uint accumulate_dx;
  uint accumulate_dw;  // covers dw and db: a weight and its bias are always accumulated together
};
REMAT_PUSH_WORDS(LayernormBackwardParams, 4)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_LAYERNORM_PARAMS_H
