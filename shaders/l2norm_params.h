// Push constants of the per-head L2 normalisation kernels (l2norm_forward.comp,
// l2norm_backward.comp), shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_L2NORM_PARAMS_H
#define REMAT_L2NORM_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// Head h of token t is the D floats of x (and dx) from t * stride + offset + h * D: q or k read in
// place from the conv's [tokens, 2 key_dim + value_dim] output. y [tokens, heads, D] is dense:
// y = x * scale / sqrt(sum_d x^2 + eps).
struct L2normParams {
  uint tokens;
  uint heads;
  uint D;
  uint stride;  // floats from one token of x to the next
  uint offset;  // floats before token 0's head 0
  float eps;
  float scale;      // 1, or 1/sqrt(d_k) for q
  uint accumulate;  // backward: 0 overwrite dx, 1 add
};
REMAT_PUSH_WORDS(L2normParams, 8)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_L2NORM_PARAMS_H
