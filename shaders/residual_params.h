// Push constants of the residual kernels (residual_forward.comp, residual_backward.comp), shared
// by GLSL and C++ like push_constants.h.
#ifndef REMAT_RESIDUAL_PARAMS_H
#define REMAT_RESIDUAL_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Forward: y[i] = a[i] + scale * b[i] for i < count (scale 1 but for a LoRA merge, whose alpha/r
// it is; 1 * b is exactly b, so the residual connection's bits do not depend on it).
struct ResidualParams {
  uint count;
  float scale;
};
REMAT_PUSH_WORDS(ResidualParams, 2)

// Backward: da[i] (=|+=) dy[i] and db[i] (=|+=) scale * dy[i]; the two gradients are routed to
// different places in the graph, so each has its own accumulate flag.
struct ResidualBackwardParams {
  uint count;
  uint accumulate_a;
  uint accumulate_b;
  float scale;
};
REMAT_PUSH_WORDS(ResidualBackwardParams, 4)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_RESIDUAL_PARAMS_H
