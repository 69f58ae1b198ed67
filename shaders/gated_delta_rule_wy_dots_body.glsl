// Included by gated_delta_rule_wy_dots.comp (storage buffers) and
// gated_delta_rule_wy_dots_texels.comp (the scratch read through texel views).
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule backward's first parallel pass, one invocation per token i of a
// block (workgroups: x blocks of the range, y value heads, z rows; CHUNK invocations each). With
// dA_ij = -dR_i . U_j (j < i) and dM_ij = dO_i . U_j (j <= i), both in i's example, through
// A_ij = beta_i Gamma_ij (k_i . k_j) and M_ij = Gamma_ij (q_i . k_j):
//   P_ij = dA_ij beta_i Gamma_ij;  Qm_ij = dM_ij Gamma_ij;
//   E_ij = (dA_ij beta_i (k_i . k_j) + dM_ij (q_i . k_j)) Gamma_ij  (j < i: Gamma_ii is 1);
//   dbr_i = sum_j dA_ij Gamma_ij (k_i . k_j).
// Rows of P, Qm and E go to the keep scratch, zero outside the masks.
layout(push_constant) uniform Push { GatedDeltaRuleWyParams p; };
#define F p.f
#include "gated_delta_rule_wy_common.glsl"

#ifdef TEXELS
layout(binding = 7) uniform textureBuffer keep_texels;  // RGBA32F view
#define KEEP4(i) texelFetch(keep_texels, int(i))
#else
layout(std430, binding = 7) readonly buffer Keep { vec4 keep4[]; };
#define KEEP4(i) keep4[i]
#endif
layout(std430, binding = 8) readonly buffer DO { float d_o[]; };
#ifdef TEXELS
layout(binding = 9) uniform textureBuffer work_texels;  // RGBA32F view
#define WORK4(i) texelFetch(work_texels, int(i))
#else
layout(std430, binding = 9) readonly buffer Work { vec4 work4[]; };
#define WORK4(i) work4[i]
#endif
// The keep scratch again, for the writes (P, Qm, E, dbr): other floats than those read.
layout(std430, binding = 10) writeonly buffer KeepOut { float keep_out[]; };

void put(uint at, float x) { keep_out[at] = x; }

float ki[DK], qi[DK];
vec4 doi[64], dri[64];  // dv4() / 4 <= 64 (dv <= 256)

void main() {
  const uint i = gl_LocalInvocationID.x, b = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint r = gl_WorkGroupID.z;
  const uint tb = block_start(b), n = block_tokens(b), kb = keep_base(r, h, b);
  const uint wb = block_base(r, h, b);
  const bool live = i < n;
  const Prefix pre = block_prefix(r, h, tb, n, i);
  const uint qk = qk_at(r, tb + min(i, n - 1), h), nv4 = dv4() / 4;
  HEAD_LOOP(a) {
    ki[a] = live ? k[qk + a] : 0.0;
    qi[a] = live ? q[qk + a] : 0.0;
  }
  const uint ob = gb_at(r, tb + min(i, n - 1), h) * F.dv;
  [[dont_unroll]] for (uint c4 = 0; c4 < nv4; ++c4) {
    vec4 x = vec4(0.0);
    [[unroll]] for (uint e = 0; e < 4; ++e)
      if (live && 4 * c4 + e < F.dv) x[e] = d_o[ob + 4 * c4 + e];
    doi[c4] = x;
    dri[c4] = KEEP4((dr_at(kb) + i * dv4()) / 4 + c4);
  }
  const float bi = live ? beta[gb_at(r, tb + i, h)] : 0.0;

  uint seg = 0;
  precise float G = 0.0, dbr = 0.0;
  [[dont_unroll]] for (uint j = 0; j < CHUNK; ++j) {
    if (j < n) {
      if (resets(r, tb + j)) {
        ++seg;
        G = 0.0;
      } else {
        G += g[gb_at(r, tb + j, h)];
      }
    }
    precise float pij = 0.0, qij = 0.0, eij = 0.0;
    if (live && j <= i && seg == pre.segi) {
      precise float kk = 0.0, qkj = 0.0;
      [[dont_unroll]] for (uint a4 = 0; a4 < DK4 / 4; ++a4) {
        const vec4 kj = WORK4((kr_at(wb) + j * DK4) / 4 + a4);
        [[unroll]] for (uint e = 0; e < 4; ++e) {
          const uint a = 4 * a4 + e;
          if (a < DK) {
            kk = fma(ki[a], kj[e], kk);
            qkj = fma(qi[a], kj[e], qkj);
          }
        }
      }
      precise float dm = 0.0, da = 0.0;
      [[dont_unroll]] for (uint c4 = 0; c4 < nv4; ++c4) {
        const vec4 uj = KEEP4((u_at(kb) + j * dv4()) / 4 + c4);
        dm += dot(doi[c4], uj);
        da += dot(dri[c4], uj);
      }
      precise float gam = decay_exp(pre.Gi - G);
      qij = dm * gam;
      if (j < i) {
        da = -da;
        pij = da * bi * gam;
        eij = (da * bi * kk + dm * qkj) * gam;
        dbr += da * gam * kk;
      }
    }
    put(p_at(kb) + i * CHUNK + j, pij);
    put(qm_at(kb) + i * CHUNK + j, qij);
    put(e_at(kb) + i * CHUNK + j, eij);
  }
  put(dbr_at(kb) + i, dbr);
}
