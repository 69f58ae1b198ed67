// Push constants of the gated delta rule kernels (gated_delta_rule_*.comp), shared by GLSL and C++
// like push_constants.h. Layouts: q, k [rows, T, Hk, dk]; v, o [rows, T, Hv, dv]; g, beta
// [rows, T, Hv]; states [rows, Hv, dk, dv]; positions [rows, T]. v (and dv) may sit in a wider
// tensor: token (r, t)'s Hv * dv floats start at (r * T + t) * v_stride + v_offset. Value head h
// reads key head h / (Hv / Hk). Every kernel runs the steps t0 <= t < t1 only.
#ifndef REMAT_GATED_DELTA_RULE_PARAMS_H
#define REMAT_GATED_DELTA_RULE_PARAMS_H

#include "push_constants.h"

#ifdef __cplusplus
namespace remat::push {
#endif

// o over [t0, t1) and the state after t1 - 1 from the state before t0. dk is the kernel's DK
// specialization constant.
struct GatedDeltaRuleParams {
  uint rows;
  uint T;
  uint Hk;
  uint Hv;
  uint dv;
  uint t0;
  uint t1;
  uint has_s_in;       // 0: the state before t0 is zero
  uint has_positions;  // 1: the state restarts from zero where positions[row, t] == 0
  uint v_stride;       // floats from one token of v to the next (Hv * dv when v is dense)
  uint v_offset;       // floats before token 0's first value head
  uint has_o;          // 0: o is not written (the forward runs for its state only)
  uint has_s_out;      // 0: the state after t1 - 1 is not written (the forward runs for o only)
};
REMAT_PUSH_WORDS(GatedDeltaRuleParams, 13)

// The backward's per-column pass: dv, dS_in and the partial sums the reduction finishes. The
// steps run in sub-ranges of `sub` steps (`subs` of them) whose first states are kept in the
// state workspace, and each sub-range's states are recomputed from its first before it is
// walked backwards.
struct GatedDeltaRuleBackwardParams {
  GatedDeltaRuleParams f;
  uint has_ds_out;  // 0: dL/dS_out is zero
  uint has_ds_in;   // 0: dS_in is not written
  uint sub;
  uint subs;
  uint blocks;  // column blocks of dv: workgroups along x
};
REMAT_PUSH_WORDS(GatedDeltaRuleBackwardParams, 18)

// The chunkwise (WY) kernels (gated_delta_rule_wy_*.comp): the forward's parameters and the
// backward's flags.
struct GatedDeltaRuleWyParams {
  GatedDeltaRuleParams f;
  uint keep;        // 1: the serial forward keeps each block's start state and U (for the backward)
  uint has_ds_out;  // 0: dL/dS_out is zero
  uint has_ds_in;   // 0: dS_in is not written
  uint pad;
};
REMAT_PUSH_WORDS(GatedDeltaRuleWyParams, 17)

// dq, dk [rows, T, Hk, dk] and dg, dbeta [rows, T, Hv] over [t0, t1) from the partial sums.
struct GatedDeltaRuleReduceParams {
  uint rows;
  uint T;
  uint Hk;
  uint Hv;
  uint dk;
  uint dv;
  uint t0;
  uint t1;
  uint blocks;
};
REMAT_PUSH_WORDS(GatedDeltaRuleReduceParams, 9)

#ifdef __cplusplus
}  // namespace remat::push
#endif
#endif  // REMAT_GATED_DELTA_RULE_PARAMS_H
