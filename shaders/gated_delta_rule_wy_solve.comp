#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule's second pass: Ut = (I + A)^-1 diag(beta) V and
// W = (I + A)^-1 diag(beta z e^G) K by forward substitution, one invocation per column x of
// [V | K], each padded to a multiple of 4 with zero columns (x < DV4: V's; workgroups: x column groups, y blocks of the range, z rows * value heads):
// X_i = rhs_i - sum_{m < i} A_im X_m, m = 0, 1, ... in order. (I + A) is unit lower triangular, so
// no pivoting and no inverse: C^2 / 2 per column instead of C^3 / 3 for T itself.
layout(push_constant) uniform Push { GatedDeltaRuleWyParams p; };
#define F p.f
#include "gated_delta_rule_wy_common.glsl"

layout(std430, binding = 7) buffer Work { float work[]; };

float X[CHUNK];

void main() {
  const uint x = gl_GlobalInvocationID.x, b = gl_WorkGroupID.y;
  const uint h = gl_WorkGroupID.z % F.Hv, r = gl_WorkGroupID.z / F.Hv;
  if (x >= dv4() + DK4) return;
  const uint tb = block_start(b), n = block_tokens(b), wb = block_base(r, h, b);
  const bool is_v = x < dv4();
  const uint col = is_v ? x : x - dv4();
  const bool real = col < (is_v ? F.dv : DK);
  BLOCK_LOOP(m, CHUNK) X[m] = 0.0;
  [[dont_unroll]] for (uint i = 0; i < CHUNK; ++i) {
    float rhs = 0.0;
    if (i < n && real) {
      const uint t = tb + i;
      const float bi = beta[gb_at(r, t, h)];
      if (is_v) {
        precise float y = bi * v[v_at(r, t, h) + x];
        rhs = y;
      } else {
        precise float y = bi * work[ze_at(wb) + i] * k[qk_at(r, t, h) + col];
        rhs = y;
      }
    }
    // X_m is zero for m >= i (never written yet this block), A_im too: whole blocks of CUNROLL.
    precise float acc = 0.0;
    BLOCK_LOOP(m, (i + CUNROLL) / CUNROLL * CUNROLL) acc = fma(work[a_at(wb) + i * CHUNK + m], X[m], acc);
    precise float xi = rhs - acc;
    X[i] = xi;
    work[(is_v ? ut_at(wb) + i * dv4() : w_at(wb) + i * DK4) + col] = xi;
  }
}
