// Included by gated_delta_rule_wy_solve.comp (storage buffers) and
// gated_delta_rule_wy_solve_texels.comp (the scratch read through texel views).
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule's second pass: Ut = (I + A)^-1 diag(beta) V and
// W = (I + A)^-1 diag(beta z e^G) K by forward substitution, one invocation per four columns of
// [V | K], each padded to a multiple of 4 with zero columns, as vec4s (workgroups: x column
// groups, y blocks of the range, z rows * value heads): X_i = rhs_i - sum_{m < i} A_im X_m,
// m = 0, 1, ... in order, A's rows read as vec4s. (I + A) is unit lower triangular, so no
// pivoting and no inverse: C^2 / 2 per column instead of C^3 / 3 for T itself.
layout(push_constant) uniform Push { GatedDeltaRuleWyParams p; };
#define F p.f
#include "gated_delta_rule_wy_common.glsl"

layout(std430, binding = 7) writeonly buffer Work { vec4 work4[]; };
// The same scratch again, for the reads (A, ze): other floats than those written.
#ifdef TEXELS
layout(binding = 8) uniform textureBuffer work_texels;  // RGBA32F view
#define WORK4R(i) texelFetch(work_texels, int(i))
#else
layout(std430, binding = 8) readonly buffer WorkIn { vec4 work4r[]; };
#define WORK4R(i) work4r[i]
#endif

vec4 X[CHUNK];

void main() {
  const uint x0 = 4 * gl_GlobalInvocationID.x, b = gl_WorkGroupID.y;
  const uint h = gl_WorkGroupID.z % F.Hv, r = gl_WorkGroupID.z / F.Hv;
  if (x0 >= dv4() + DK4) return;
  const uint tb = block_start(b), n = block_tokens(b), wb = block_base(r, h, b);
  const bool is_v = x0 < dv4();
  const uint col = is_v ? x0 : x0 - dv4(), width = is_v ? F.dv : DK;
  BLOCK_LOOP(m, CHUNK) X[m] = vec4(0.0);
  [[dont_unroll]] for (uint i = 0; i < CHUNK; ++i) {
    vec4 rhs = vec4(0.0);
    if (i < n) {
      const uint t = tb + i;
      const float bi = beta[gb_at(r, t, h)];
      const float bz = bi * WORK4R((ze_at(wb) + i) / 4)[i % 4];
      [[unroll]] for (uint e = 0; e < 4; ++e)
        if (col + e < width) {
          precise float y = is_v ? bi * v[v_at(r, t, h) + col + e] : bz * k[qk_at(r, t, h) + col + e];
          rhs[e] = y;
        }
    }
    // X_m is zero for m >= i (never written yet this block), A_im too: whole vec4s.
    precise vec4 acc = vec4(0.0);
    [[dont_unroll]] for (uint m4 = 0; m4 < (i + 3) / 4; ++m4) {
      const vec4 av = WORK4R((a_at(wb) + i * CHUNK) / 4 + m4);
      [[unroll]] for (uint e = 0; e < 4; ++e) acc = fma(vec4(av[e]), X[4 * m4 + e], acc);
    }
    precise vec4 xi = rhs - acc;
    X[i] = xi;
    work4[((is_v ? ut_at(wb) + i * dv4() : w_at(wb) + i * DK4) + col) / 4] = xi;
  }
}
