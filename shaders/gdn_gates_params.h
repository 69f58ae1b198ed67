// Push constants of Gated DeltaNet's decay and beta gates (gdn_gates_forward.comp,
// gdn_gates_backward.comp), shared by GLSL and C++ like push_constants.h.
#ifndef REMAT_GDN_GATES_PARAMS_H
#define REMAT_GDN_GATES_PARAMS_H

#include "push_constants.h"

// gdn_gates_backward.comp's workgroup size: a constant of the kernel, not a device choice,
// because it decides the parameter gradients' summation order.
#define GDN_GATES_GROUP 64

#ifdef __cplusplus
namespace remat::push {
#endif

// a, b, g, beta [tokens, heads]; A_log, dt_bias [heads].
// g = -exp(A_log[h]) * softplus(a + dt_bias[h]), beta = sigmoid(b).
// Backward: da, db (each its own accumulate flag) and dA_log, ddt_bias (one flag for both).
struct GdnGatesParams {
  uint tokens;
  uint heads;
  uint accumulate_da;
  uint accumulate_db;
  uint accumulate_dparams;  // 0 overwrite, 1 add, 2 no parameter gradients (frozen)
};
REMAT_PUSH_WORDS(GdnGatesParams, 5)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_GDN_GATES_PARAMS_H
