// Push constants of the cross-entropy kernels (cross_entropy_forward.comp,
// cross_entropy_backward.comp), shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_CROSS_ENTROPY_PARAMS_H
#define REMAT_CROSS_ENTROPY_PARAMS_H

#include "push_constants.h"

// A target equal to this is not trained: its loss is 0 and its logits get no gradient. The same
// value as remat::kIgnoreTarget (base/ignore_target.h), which data pipelines write.
#define REMAT_IGNORE_TARGET 0xFFFFFFFFu

#ifdef __cplusplus
#include "base/ignore_target.h"
static_assert(REMAT_IGNORE_TARGET == remat::kIgnoreTarget,
              "the kernels and the data pipelines must agree on the ignored target");
namespace remat::push {
#endif

// Forward: losses[r] = logsumexp(logits[r,:]) - logits[r, targets[r]], or 0 for an ignored target.
// Backward: dlogits[r,v] = scale * (softmax(logits[r,:])[v] - (v == targets[r])), overwritten,
// and 0 on an ignored target's row. scale is 1/(trained targets of the optimizer step) for the
// mean loss; it changes with every step's mask, so the backward reads it from a buffer the host
// writes before each step (binding 3, float scale_word of it), not from the recorded push
// constants. With scale_stride 1 each row reads its own scale, float scale_word + row: a
// preference objective (DPO, KTO) weighs each row's summed log-prob by its own coefficient
// (graph/preference_loss.h). Stride 0 reads the one word for every row, the same bits as ever.
struct CrossEntropyParams {
  uint rows;  // BT
  uint V;
  uint scale_word;    // backward only
  uint scale_stride;  // backward only: 0 (one scale) or 1 (one per row)
};
REMAT_PUSH_WORDS(CrossEntropyParams, 4)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_CROSS_ENTROPY_PARAMS_H
