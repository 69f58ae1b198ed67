// Push constants of the sigmoid output gate kernels (sigmoid_gate_*.comp), shared by GLSL and
// C++ like push_constants.h.
#ifndef REMAT_SIGMOID_GATE_PARAMS_H
#define REMAT_SIGMOID_GATE_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// y[i] = x[i] * sigmoid(gate[j]) for i < count, x and y dense [tokens, heads, D]; element d of
// head row k = i / D has its gate at j = k * gate_head_stride + gate_offset + d: Qwen3.5's
// q_proj output holds per head D query floats then D gate floats (stride 2D, offset D), a dense
// gate has stride D, offset 0. Backward: dx at i, dgate at j.
struct SigmoidGateParams {
  uint count;
  uint D;
  uint gate_head_stride;
  uint gate_offset;
  uint accumulate_dx;  // backward only (each: 0 overwrite, 1 add)
  uint accumulate_dgate;
};
REMAT_PUSH_WORDS(SigmoidGateParams, 6)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_SIGMOID_GATE_PARAMS_H
