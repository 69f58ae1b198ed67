// Included by gated_delta_rule_wy_state_backward.comp (storage buffers) and
// gated_delta_rule_wy_state_backward_texels.comp (the scratch read through texel views).
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule backward's serial pass, blocks last first, one invocation per
// four columns of the (row, value head) state, as vec4s (workgroups: x column groups, y value
// heads, z rows). dS holds dL/dS after the block (dS_out for the last); per block:
//   dU_i = sum_{m >= i} M_mi dO_m + Kd_i . dS
//   dS  <- ze_last dS + sum_i Qz_i dO_i^T - sum_i W_i dU_i^T      (dL/dS0 of the block)
//   dR   = (I + A)^-T dU by back substitution;  dv_i = beta_i dR_i
// keeping dS after the block, dU, dR and <S0, dS after> per column for the parallel passes.
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
layout(std430, binding = 8) buffer Keep { vec4 keep4[]; };
layout(std430, binding = 9) readonly buffer DO { float d_o[]; };
layout(std430, binding = 10) readonly buffer DSOut { float ds_out[]; };
layout(std430, binding = 11) writeonly buffer DV { float dv_out[]; };
layout(std430, binding = 12) writeonly buffer DSIn { float ds_in[]; };

vec4 dS[DK4], dOb[CHUNK], dU[CHUNK];

vec4 at4(uint at) { return WORK4(at / 4); }
float at1(uint at) { return WORK4(at / 4)[at % 4]; }

void main() {
  const uint c0 = 4 * gl_GlobalInvocationID.x, h = gl_WorkGroupID.y, r = gl_WorkGroupID.z;
  if (c0 >= F.dv) return;
  const uint sbase = (r * F.Hv + h) * DK * F.dv + c0;
  [[dont_unroll]] for (uint a = 0; a < DK4; ++a) {
    vec4 x = vec4(0.0);
    [[unroll]] for (uint e = 0; e < 4; ++e)
      if (p.has_ds_out != 0 && a < DK && c0 + e < F.dv) x[e] = ds_out[sbase + a * F.dv + e];
    dS[a] = x;
  }

  for (uint b = blocks_in_range(); b-- > 0;) {
    const uint tb = block_start(b), n = block_tokens(b), wb = block_base(r, h, b);
    const uint kb = keep_base(r, h, b);
    precise vec4 sds = vec4(0.0);
    [[dont_unroll]] for (uint a = 0; a < DK4; ++a) {
      keep4[(dso_at(kb) + a * dv4() + c0) / 4] = dS[a];
      sds = fma(keep4[(s0_at(kb) + a * dv4() + c0) / 4], dS[a], sds);
    }
    keep4[(sds_at(kb) + c0) / 4] = sds;
    [[dont_unroll]] for (uint i = 0; i < CHUNK; ++i) {
      vec4 x = vec4(0.0);
      const uint ob = gb_at(r, tb + min(i, n - 1), h) * F.dv + c0;
      [[unroll]] for (uint e = 0; e < 4; ++e)
        if (i < n && c0 + e < F.dv) x[e] = d_o[ob + e];
      dOb[i] = x;
    }
    // dU, four rows at a time: M_mi is zero for m < i, so m runs from the group's first row.
    [[dont_unroll]] for (uint i0 = 0; i0 < CHUNK; i0 += 4) {
      precise vec4 md[4], ks[4];
      [[unroll]] for (uint e = 0; e < 4; ++e) md[e] = ks[e] = vec4(0.0);
      [[dont_unroll]] for (uint m = i0; m < CHUNK; ++m) {
        const vec4 mv = at4(m_at(wb) + m * CHUNK + i0), dom = dOb[m];
        [[unroll]] for (uint e = 0; e < 4; ++e) md[e] = fma(vec4(mv[e]), dom, md[e]);
      }
      [[dont_unroll]] for (uint a4 = 0; a4 < DK4 / 4; ++a4) {
        vec4 kd[4];
        [[unroll]] for (uint e = 0; e < 4; ++e) kd[e] = at4(kd_at(wb) + (i0 + e) * DK4 + 4 * a4);
        [[unroll]] for (uint x = 0; x < 4; ++x) {
          const vec4 dsa = dS[4 * a4 + x];
          [[unroll]] for (uint e = 0; e < 4; ++e) ks[e] = fma(vec4(kd[e][x]), dsa, ks[e]);
        }
      }
      [[unroll]] for (uint e = 0; e < 4; ++e) {
        precise vec4 du = md[e] + ks[e];
        dU[i0 + e] = du;
        keep4[(du_at(kb) + (i0 + e) * dv4() + c0) / 4] = du;
      }
    }
    const float zl = at1(ze_at(wb) + n - 1);
    [[dont_unroll]] for (uint a4 = 0; a4 < DK4 / 4; ++a4) {
      precise vec4 qd[4], wu[4];
      [[unroll]] for (uint x = 0; x < 4; ++x) qd[x] = wu[x] = vec4(0.0);
      BLOCK_LOOP(i, CHUNK) {
        const vec4 qz = at4(qz_at(wb) + i * DK4 + 4 * a4), w = at4(w_at(wb) + i * DK4 + 4 * a4);
        const vec4 doi = dOb[i], dui = dU[i];
        [[unroll]] for (uint x = 0; x < 4; ++x) {
          qd[x] = fma(vec4(qz[x]), doi, qd[x]);
          wu[x] = fma(vec4(w[x]), dui, wu[x]);
        }
      }
      [[unroll]] for (uint x = 0; x < 4; ++x) {
        precise vec4 d = zl * dS[4 * a4 + x] + qd[x] - wu[x];
        dS[4 * a4 + x] = d;
      }
    }
    // (I + A)^T dR = dU, rows last first, in place: once dR_i is final, its terms leave the rows
    // before it, i = CHUNK - 1, ..., j + 1 in order for each dR_j.
    for (uint i = CHUNK; i-- > 0;) {
      const vec4 dri = dU[i];
      keep4[(dr_at(kb) + i * dv4() + c0) / 4] = dri;
      if (i < n) {
        const uint vb = v_at(r, tb + i, h) + c0;
        const float bi = beta[gb_at(r, tb + i, h)];
        [[unroll]] for (uint e = 0; e < 4; ++e)
          if (c0 + e < F.dv) {
            precise float d = bi * dri[e];
            dv_out[vb + e] = d;
          }
      }
      [[dont_unroll]] for (uint j4 = 0; j4 < (i + 3) / 4; ++j4) {
        const vec4 av = at4(a_at(wb) + i * CHUNK + 4 * j4);
        [[unroll]] for (uint x = 0; x < 4; ++x)
          if (4 * j4 + x < i) {
            precise vec4 d = dU[4 * j4 + x] - av[x] * dri;
            dU[4 * j4 + x] = d;
          }
      }
    }
  }
  if (p.has_ds_in != 0)
    [[dont_unroll]] for (uint a = 0; a < DK; ++a) {
      [[unroll]] for (uint e = 0; e < 4; ++e)
        if (c0 + e < F.dv) ds_in[sbase + a * F.dv + e] = dS[a][e];
    }
}
