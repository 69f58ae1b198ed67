// Push constants of round_act_f16.comp and round_act_bf16.comp, shared by GLSL and C++ like
// push_constants.h.
#ifndef REMAT_ROUND_PARAMS_H
#define REMAT_ROUND_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// x[i] = widen(narrow(x[i])) for i < count.
struct RoundParams {
  uint count;
};
REMAT_PUSH_WORDS(RoundParams, 1)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_ROUND_PARAMS_H
