// Push constants of the GELU kernels (gelu_forward.comp, gelu_backward.comp), shared by GLSL and
// C++ like push_constants.h.
#ifndef REMAT_GELU_PARAMS_H
#define REMAT_GELU_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Forward: y[i] = gelu(x[i]) for i < count. Backward: dx[i] (=|+=) gelu'(x[i]) * dy[i].
struct GeluParams {
  uint count;
  uint accumulate;  // backward only: 0 overwrite dx, 1 add to it
};
REMAT_PUSH_WORDS(GeluParams, 2)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_GELU_PARAMS_H
