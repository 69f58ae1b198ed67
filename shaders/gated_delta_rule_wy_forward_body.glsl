// Included by gated_delta_rule_wy_forward.comp (storage buffers) and
// gated_delta_rule_wy_forward_texels.comp (the scratch read through texel views).
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule's serial pass over the blocks of [t0, t1), one invocation per
// four columns c of the (row, value head) state, as vec4s (the columns evolve independently;
// workgroups: x column groups, y value heads, z rows). Per block, from S0 (these columns: s):
//   u_i = Ut_ic - W_i . s;  o_ic = Qz_i . s + sum_{j <= i} M_ij u_j;
//   s_a = ze_last s_a + sum_j Kd_ja u_j.
// Every workspace read is a vec4 (llvmpipe loads storage buffers lane by lane, so a vec4 does four
// times the work of a float per load), and serves four columns times four elements; rows go R at
// a time so each s_a read from the private array serves R of them. Each sum still runs its terms
// in one order, so neither grouping changes a bit. Without o (has_o 0) its binding repeats s_out,
// never written through it; without s_out, o.
layout(push_constant) uniform Push { GatedDeltaRuleWyParams p; };
#define F p.f
#include "gated_delta_rule_wy_common.glsl"

#ifdef TEXELS
layout(binding = 7) uniform textureBuffer work_texels;  // RGBA32F view
#define WORK4(i) texelFetch(work_texels, int(i))
#else
layout(std430, binding = 7) readonly buffer Work { vec4 work4[]; };
#define WORK4(i) work4[i]
#endif
layout(std430, binding = 8) writeonly buffer O { float o[]; };
layout(std430, binding = 9) writeonly buffer SOut { float s_out[]; };
// With keep (the backward's recompute): each block's start state and U (gated_delta_rule_wy_common.glsl).
layout(std430, binding = 10) writeonly buffer Keep { vec4 keep4[]; };

const uint R = 8;  // rows per group: 8 divides CHUNK
vec4 s[DK4], u[CHUNK];

vec4 at4(uint at) { return WORK4(at / 4); }

void main() {
  const uint c0 = 4 * gl_GlobalInvocationID.x, h = gl_WorkGroupID.y, r = gl_WorkGroupID.z;
  if (c0 >= F.dv) return;
  const uint sbase = (r * F.Hv + h) * DK * F.dv + c0;
  [[dont_unroll]] for (uint a = 0; a < DK4; ++a) {
    vec4 x = vec4(0.0);
    [[unroll]] for (uint e = 0; e < 4; ++e)
      if (F.has_s_in != 0 && a < DK && c0 + e < F.dv) x[e] = s_in[sbase + a * F.dv + e];
    s[a] = x;
  }

  const uint nb = blocks_in_range();
  for (uint b = 0; b < nb; ++b) {
    const uint tb = block_start(b), n = block_tokens(b), wb = block_base(r, h, b);
    BLOCK_LOOP(j, CHUNK) u[j] = vec4(0.0);
    const uint kb = keep_base(r, h, b);
    if (p.keep != 0) [[dont_unroll]] for (uint a = 0; a < DK4; ++a) keep4[(s0_at(kb) + a * dv4() + c0) / 4] = s[a];
    for (uint i0 = 0; i0 < n; i0 += R) {
      precise vec4 ws[R], qs[R], mu[R];
      [[unroll]] for (uint e = 0; e < R; ++e) ws[e] = qs[e] = mu[e] = vec4(0.0);
      [[dont_unroll]] for (uint a4 = 0; a4 < DK4 / 4; ++a4) {
        vec4 wv[R], qv[R];
        [[unroll]] for (uint e = 0; e < R; ++e) {
          wv[e] = at4(w_at(wb) + (i0 + e) * DK4 + 4 * a4);
          qv[e] = at4(qz_at(wb) + (i0 + e) * DK4 + 4 * a4);
        }
        [[unroll]] for (uint x = 0; x < 4; ++x) {
          const vec4 sa = s[4 * a4 + x];
          [[unroll]] for (uint e = 0; e < R; ++e) {
            ws[e] = fma(vec4(wv[e][x]), sa, ws[e]);
            qs[e] = fma(vec4(qv[e][x]), sa, qs[e]);
          }
        }
      }
      [[unroll]] for (uint e = 0; e < R; ++e) {
        precise vec4 ui = at4(ut_at(wb) + (i0 + e) * dv4() + c0) - ws[e];
        u[i0 + e] = ui;
        if (p.keep != 0) keep4[(u_at(kb) + (i0 + e) * dv4() + c0) / 4] = ui;
      }
      // M_ij is zero for j > i and u_j zero past the rows done: whole vec4s.
      [[dont_unroll]] for (uint j4 = 0; j4 < (i0 + R + 3) / 4; ++j4) {
        vec4 mv[R];
        [[unroll]] for (uint e = 0; e < R; ++e) mv[e] = at4(m_at(wb) + (i0 + e) * CHUNK + 4 * j4);
        [[unroll]] for (uint x = 0; x < 4; ++x) {
          const vec4 uj = u[4 * j4 + x];
          [[unroll]] for (uint e = 0; e < R; ++e) mu[e] = fma(vec4(mv[e][x]), uj, mu[e]);
        }
      }
      if (F.has_o != 0)
        [[unroll]] for (uint e = 0; e < R; ++e) {
          precise vec4 oi = qs[e] + mu[e];
          const uint ob = gb_at(r, tb + min(i0 + e, n - 1), h) * F.dv + c0;
          [[unroll]] for (uint x = 0; x < 4; ++x)
            if (i0 + e < n && c0 + x < F.dv) o[ob + x] = oi[x];
        }
    }
    const float zl = at4(ze_at(wb) + (n - 1) / 4 * 4)[(n - 1) % 4];
    [[dont_unroll]] for (uint a4 = 0; a4 < DK4 / 4; ++a4) {
      precise vec4 acc[4];
      [[unroll]] for (uint x = 0; x < 4; ++x) acc[x] = vec4(0.0);
      BLOCK_LOOP(j, CHUNK) {
        const vec4 kd = at4(kd_at(wb) + j * DK4 + 4 * a4), uj = u[j];
        [[unroll]] for (uint x = 0; x < 4; ++x) acc[x] = fma(vec4(kd[x]), uj, acc[x]);
      }
      [[unroll]] for (uint x = 0; x < 4; ++x) {
        precise vec4 sa = zl * s[4 * a4 + x] + acc[x];
        s[4 * a4 + x] = sa;
      }
    }
  }
  if (F.has_s_out != 0)
    [[dont_unroll]] for (uint a = 0; a < DK; ++a) {
      [[unroll]] for (uint e = 0; e < 4; ++e)
        if (c0 + e < F.dv) s_out[sbase + a * F.dv + e] = s[a][e];
    }
}
