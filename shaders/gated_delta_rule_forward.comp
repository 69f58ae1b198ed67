#version 450
#extension GL_GOOGLE_include_directive : require
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

void main() {
  const uint j = gl_GlobalInvocationID.x, h = gl_WorkGroupID.y, r = gl_WorkGroupID.z;
  if (j >= F.dv) return;
  // Column j of the [dk, dv] state: element i at sbase + i * dv.
  const uint sbase = (r * F.Hv + h) * DK * F.dv + j;
  [[unroll]] for (uint i = 0; i < DK; ++i) s[i] = F.has_s_in != 0 ? s_in[sbase + i * F.dv] : 0.0;

  for (uint t = F.t0; t < F.t1; ++t) {
    if (resets(r, t)) zero_state();
    const uint gb = gb_at(r, t, h), qk = qk_at(r, t, h);
    load_k(qk);
    const float kv = decay_and_predict(decay(gb));
    write_delta(beta[gb], v[v_at(r, t, h) + j], kv);
    if (F.has_o == 0) continue;
    precise float acc = 0.0;
    [[unroll]] for (uint i = 0; i < DK; ++i) acc = fma(q[qk + i], s[i], acc);
    o[gb * F.dv + j] = acc;
  }
  if (F.has_s_out != 0)
    [[unroll]] for (uint i = 0; i < DK; ++i) s_out[sbase + i * F.dv] = s[i];
}
