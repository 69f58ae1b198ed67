// Included by gated_delta_rule_forward.comp (head loops fully unrolled) and
// gated_delta_rule_forward_blocks.comp (in blocks; gated_delta_rule_common.glsl says why).
#include "gated_delta_rule_params.h"

// Gated delta rule forward over steps [t0, t1) (Yang et al. 2024, "Gated Delta Networks";
// transformers' torch_recurrent_gated_delta_rule with q, k normalised and q scaled beforehand):
// per (row, value head), S = exp(g_t) S; S += beta_t k_t (v_t - S^T k_t)^T; o_t = S^T q_t, the
// state restarting from zero where positions[t] == 0. Workgroups: x column blocks of dv, y value
// heads, z rows; one invocation per column (gated_delta_rule_common.glsl). Without o (has_o 0)
// its binding repeats s_out, never written through it; without s_out (has_s_out 0), o.
layout(push_constant) uniform Push { GatedDeltaRuleParams p; };
#define F p
#include "gated_delta_rule_common.glsl"

layout(std430, binding = 7) writeonly buffer O { float o[]; };
layout(std430, binding = 8) writeonly buffer SOut { float s_out[]; };

// Starts step t: the state restarts or decays, s = a s (kept in s), k_t goes to kt, and the
// prediction kv = k_t . s is summed. `prev` holds each element of the state before it.
#define START_STEP(prev)                                  \
  {                                                       \
    const float ki = k[qk + i], di = decayed(a, reset ? 0.0 : prev); \
    kt[i] = ki;                                           \
    s[i] = di;                                            \
    kv = predict(ki, di, kv);                             \
  }

void main() {
  const uint j = gl_GlobalInvocationID.x, h = gl_WorkGroupID.y, r = gl_WorkGroupID.z;
  if (j >= F.dv) return;
  // Column j of the [dk, dv] state: element i at sbase + i * dv.
  const uint sbase = (r * F.Hv + h) * DK * F.dv + j;
  HEAD_LOOP(i) s[i] = F.has_s_in != 0 ? s_in[sbase + i * F.dv] : 0.0;

  // Software-pipelined: one head loop finishes step t (the write, o_t) and starts step t + 1,
  // element by element; every element and every sum sees the operations of the two-pass form in
  // the same order. The host counts the loops (gated_delta_rule.cpp).
  uint qk = qk_at(r, F.t0, h);
  bool reset = resets(r, F.t0);
  float a = decay(gb_at(r, F.t0, h));
  precise float kv = 0.0;
  HEAD_LOOP(i) START_STEP(s[i])
  for (uint t = F.t0; t < F.t1; ++t) {
    const uint gb = gb_at(r, t, h), qt = qk;
    const float delta = delta_of(beta[gb], v[v_at(r, t, h) + j], kv);
    precise float acc = 0.0;
    if (t + 1 < F.t1) {
      qk = qk_at(r, t + 1, h);
      reset = resets(r, t + 1);
      a = decay(gb_at(r, t + 1, h));
      kv = 0.0;
      HEAD_LOOP(i) {
        const float si = written(kt[i], delta, s[i]);
        acc = fma(q[qt + i], si, acc);
        START_STEP(si)
      }
    } else {
      HEAD_LOOP(i) {
        const float si = written(kt[i], delta, s[i]);
        acc = fma(q[qt + i], si, acc);
        s[i] = si;
      }
    }
    if (F.has_o != 0) o[gb * F.dv + j] = acc;
  }
  if (F.has_s_out != 0) {
    HEAD_LOOP(i) s_out[sbase + i * F.dv] = s[i];
  }
}
