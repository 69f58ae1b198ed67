// Push constants of the cross-entropy kernels (cross_entropy_forward.comp,
// cross_entropy_backward.comp), shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_CROSS_ENTROPY_PARAMS_H
#define REMAT_CROSS_ENTROPY_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Forward: losses[r] = logsumexp(logits[r,:]) - logits[r, targets[r]].
// Backward: dlogits[r,v] = scale * (softmax(logits[r,:])[v] - (v == targets[r])), overwritten;
// scale is 1/BT for the mean loss.
struct CrossEntropyParams {
  uint rows;  // BT
  uint V;
  float scale;  // backward only
};
REMAT_PUSH_WORDS(CrossEntropyParams, 3)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_CROSS_ENTROPY_PARAMS_H
