// Push constants of the gated RMSNorm kernels (gated_rmsnorm_*.comp), shared by GLSL and C++
// like push_constants.h.
#ifndef REMAT_GATED_RMSNORM_PARAMS_H
#define REMAT_GATED_RMSNORM_PARAMS_H

#include "push_constants.h"

// gated_rmsnorm_backward_weight.comp's workgroup size: a constant of the kernel, not a device
// choice, because it decides dw's summation order.
#define GATED_RMSNORM_WEIGHT_GROUP 64

#ifdef __cplusplus
namespace remat::push {
#endif

// o, z, y [rows, D] (rows = tokens * value heads), w [D], rstd [rows]:
// y = o * rstd * w * silu(z), rstd = 1/sqrt(mean(o^2) + eps). w is the gain itself (not 1 + w).
struct GatedRmsnormParams {
  uint rows;
  uint D;
  float eps;
  uint accumulate_do;  // backward only (each: 0 overwrite, 1 add)
  uint accumulate_dz;
  uint accumulate_dw;
};
REMAT_PUSH_WORDS(GatedRmsnormParams, 6)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_GATED_RMSNORM_PARAMS_H
