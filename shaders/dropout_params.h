// Push constants of the dropout kernels (dropout_forward.comp, dropout_backward.comp), shared by
// GLSL and C++ like push_constants.h, plus the host-side conversions of the drop probability so
// the dispatch builder and the CPU reference derive bit-identical values.
#ifndef REMAT_DROPOUT_PARAMS_H
#define REMAT_DROPOUT_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Element i is dropped when word (i % 4) of Philox4x32-10(counter = (i / 4, step, op_id, 0),
// key = (seed_lo, seed_hi)) is below `threshold`; kept elements are scaled by `scale`.
// The mask is never stored: the backward regenerates it from the same key and counters.
struct DropoutParams {
  uint count;
  uint seed_lo;
  uint seed_hi;
  uint step;       // training step, added to steps[step_word] when step_from_buffer is 1
  uint op_id;
  uint threshold;   // round(p * 2^32)
  float scale;      // 1 / (1 - p)
  uint accumulate;  // backward only: 0 overwrite dx, 1 add to it
  // A recorded step is replayed with a new training step each time, so the step can come from
  // a buffer the host rewrites (binding 2; the AdamW hyperparameter block in a session).
  uint step_from_buffer;
  uint step_word;   // index of the step in that buffer's uint array
};
REMAT_PUSH_WORDS(DropoutParams, 10)

#ifdef __cplusplus
// p in [0, 1): P(drop) = threshold / 2^32, exact to 2^-32.
inline uint dropout_threshold(double p) {
  const double t = p * 4294967296.0 + 0.5;
  return t >= 4294967295.0 ? 4294967295u : t <= 0 ? 0u : static_cast<uint>(t);
}
inline float dropout_scale(double p) {
  return static_cast<float>(1.0 / (1.0 - p));
}
}  // namespace remat::push
#endif
#endif  // REMAT_DROPOUT_PARAMS_H
