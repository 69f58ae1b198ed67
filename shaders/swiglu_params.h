// Push constants of the SwiGLU kernels (swiglu_forward.comp, swiglu_backward.comp), shared by
// GLSL and C++ like push_constants.h.
#ifndef REMAT_SWIGLU_PARAMS_H
#define REMAT_SWIGLU_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Forward: h[i] = act(g[i]) * u[i] for i < count. Backward: dg[i] (=|+=) dh u act'(g),
// du[i] (=|+=) dh act(g). act is silu (SwiGLU, Llama) or GPT-2's tanh GELU (GeGLU, Gemma).
struct SwigluParams {
  uint count;
  uint accumulate_dg;  // backward only: 0 overwrite, 1 add
  uint accumulate_du;  // backward only: 0 overwrite, 1 add
  uint gelu_gate;      // 0: act = silu; 1: act = gelu (tanh approximation, gelu.glsl)
};
REMAT_PUSH_WORDS(SwigluParams, 4)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_SWIGLU_PARAMS_H
