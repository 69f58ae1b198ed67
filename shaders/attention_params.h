// Push constants of the causal multi-head attention kernels (shared by GLSL and C++, see
// push_constants.h for why every member is a 32-bit scalar).
#ifndef REMAT_ATTENTION_PARAMS_H
#define REMAT_ATTENTION_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// attention_forward.comp:  qkv[B,T,3C] -> out[B,T,C], lse[B,NH,T]
// attention_backward.comp: dout[B,T,C], qkv, out, lse -> dqkv[B,T,3C]
// qkv holds q, k, v side by side per position (GPT-2's c_attn output): q in columns [0,C),
// k in [C,2C), v in [2C,3C); head h uses columns h*hs .. (h+1)*hs of each, hs = C / NH (also
// the kernels' HS specialization constant). scale is 1/sqrt(hs).
// accumulate (backward only) 0: overwrite dqkv; 1: add onto it (docs/ops.md).
struct AttentionParams {
  uint B;
  uint T;
  uint C;
  uint NH;
  float scale;
  uint accumulate;
};
REMAT_PUSH_WORDS(AttentionParams, 6)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_ATTENTION_PARAMS_H
