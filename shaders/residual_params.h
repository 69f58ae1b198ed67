// Push constants of the residual kernels (residual_forward.comp, residual_backward.comp), shared
// by GLSL and C++ like push_constants.h.
#ifndef REMAT_RESIDUAL_PARAMS_H
#define REMAT_RESIDUAL_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Forward: y[i] = a[i] + b[i] for i < count.
struct ResidualParams {
  uint count;
};
REMAT_PUSH_WORDS(ResidualParams, 1)

// Backward: da[i] (=|+=) dy[i] and db[i] (=|+=) dy[i]; the two gradients are routed to different
// places in the graph, so each has its own accumulate flag.
struct ResidualBackwardParams {
  uint count;
  uint accumulate_a;
  uint accumulate_b;
};
REMAT_PUSH_WORDS(ResidualBackwardParams, 3)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_RESIDUAL_PARAMS_H
