// Push constants of the SwiGLU kernels (swiglu_forward.comp, swiglu_backward.comp), shared by
// GLSL and C++ like push_constants.h.
#ifndef REMAT_SWIGLU_PARAMS_H
#define REMAT_SWIGLU_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Forward: h[i] = silu(g[i]) * u[i] for i < count. Backward: dg[i] (=|+=) dh u silu'(g),
// du[i] (=|+=) dh silu(g).
struct SwigluParams {
  uint count;
  uint accumulate_dg;  // backward only: 0 overwrite, 1 add
  uint accumulate_du;  // backward only: 0 overwrite, 1 add
};
REMAT_PUSH_WORDS(SwigluParams, 3)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_SWIGLU_PARAMS_H
