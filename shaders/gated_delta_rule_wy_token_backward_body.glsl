// Included by gated_delta_rule_wy_token_backward.comp (storage buffers) and
// gated_delta_rule_wy_token_backward_texels.comp (the scratch read through texel views).
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule backward's second parallel pass, one invocation per token i of
// a block (workgroups: x blocks of the range, y value heads, z rows; CHUNK invocations each). With
// S0 and dSo the state before the block and dL/dS after it, x = S0 dO_i, y = S0 dR_i, w = dSo u_i
// ([DK] each, sums over the dv columns in order) and D_i = Gamma_{last, i} (i in the last
// token's example):
//   dq_i = ze_i x + sum_j Qm_ij k_j
//   dk_i = -beta_i ze_i y + D_i w + sum_j (P_ij + P_ji) k_j + sum_j Qm_ji q_j
//   dbeta_i = dR_i . v_i - ze_i (y . k_i) + dbr_i
//   dG_i = -beta_i ze_i (y . k_i) + ze_i (q_i . x) + sum_{j < i} E_ij - sum_{j > i} E_ji - dDD_i,
//   dDD_i = D_i (k_i . w) for i before the last token (the last one's G takes their sum in
//   gated_delta_rule_wy_finish.comp). dq, dk go per value head to the partials, [rows, L, Hv, DK].
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
layout(std430, binding = 9) writeonly buffer Partials { float partials[]; };
layout(std430, binding = 10) writeonly buffer DBeta { float dbeta[]; };
#ifdef TEXELS
layout(binding = 11) uniform textureBuffer work_texels;  // RGBA32F view
#define WORK4(i) texelFetch(work_texels, int(i))
#else
layout(std430, binding = 11) readonly buffer Work { vec4 work4[]; };
#define WORK4(i) work4[i]
#endif
// The keep scratch again, for the writes (dG, dDD): other floats than those read.
layout(std430, binding = 12) writeonly buffer KeepOut { float keep_out[]; };

float ki[DK], qi[DK], dq[DK], dk[DK];
vec4 doi[64], dri[64], ui[64];  // dv4() / 4 <= 64 (dv <= 256)

float get(uint at) { return KEEP4(at / 4)[at % 4]; }
void put(uint at, float x) { keep_out[at] = x; }

void main() {
  const uint i = gl_LocalInvocationID.x, b = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint r = gl_WorkGroupID.z;
  const uint tb = block_start(b), n = block_tokens(b), kb = keep_base(r, h, b);
  const uint wb = block_base(r, h, b);
  if (i >= n) return;
  const Prefix pre = block_prefix(r, h, tb, n, i);
  const uint t = tb + i, qk = qk_at(r, t, h), nv4 = dv4() / 4, gb = gb_at(r, t, h);
  const float bi = beta[gb];
  const float ze = pre.segi == 0 ? decay_exp(pre.Gi) : 0.0;
  const float D = pre.segi == pre.segl ? decay_exp(pre.Gl - pre.Gi) : 0.0;
  HEAD_LOOP(a) {
    ki[a] = k[qk + a];
    qi[a] = q[qk + a];
  }
  const uint ob = gb * F.dv, vb = v_at(r, t, h);
  precise float dbv = 0.0;
  [[dont_unroll]] for (uint c4 = 0; c4 < nv4; ++c4) {
    vec4 x = vec4(0.0), vv = vec4(0.0);
    [[unroll]] for (uint e = 0; e < 4; ++e)
      if (4 * c4 + e < F.dv) x[e] = d_o[ob + 4 * c4 + e], vv[e] = v[vb + 4 * c4 + e];
    doi[c4] = x;
    dri[c4] = KEEP4((dr_at(kb) + i * dv4()) / 4 + c4);
    ui[c4] = KEEP4((u_at(kb) + i * dv4()) / 4 + c4);
    dbv += dot(dri[c4], vv);
  }

  // The products with S0 and dSo, element a of each.
  precise float sky = 0.0, sqx = 0.0, skw = 0.0;
  [[dont_unroll]] for (uint a = 0; a < DK; ++a) {
    precise float x = 0.0, y = 0.0, w = 0.0;
    [[dont_unroll]] for (uint c4 = 0; c4 < nv4; ++c4) {
      const vec4 s0 = KEEP4((s0_at(kb) + a * dv4()) / 4 + c4);
      const vec4 dso = KEEP4((dso_at(kb) + a * dv4()) / 4 + c4);
      x += dot(s0, doi[c4]);
      y += dot(s0, dri[c4]);
      w += dot(dso, ui[c4]);
    }
    precise float dqa = ze * x, dka = D * w - bi * ze * y;
    dq[a] = dqa;
    dk[a] = dka;
    sky = fma(y, ki[a], sky);
    sqx = fma(qi[a], x, sqx);
    skw = fma(ki[a], w, skw);
  }

  // The block's pairs, j = 0, 1, ... in order.
  precise float dG = 0.0;
  [[dont_unroll]] for (uint j = 0; j < n; ++j) {
    const float pij = get(p_at(kb) + i * CHUNK + j), pji = get(p_at(kb) + j * CHUNK + i);
    const float qij = get(qm_at(kb) + i * CHUNK + j), qji = get(qm_at(kb) + j * CHUNK + i);
    if (j < i) dG += get(e_at(kb) + i * CHUNK + j);
    if (j > i) dG -= get(e_at(kb) + j * CHUNK + i);
    if (pij != 0.0 || pji != 0.0 || qij != 0.0 || qji != 0.0) {
      precise float pp = pij + pji;
      [[dont_unroll]] for (uint a4 = 0; a4 < DK4 / 4; ++a4) {
        const vec4 kj = WORK4((kr_at(wb) + j * DK4) / 4 + a4);
        const vec4 qj = WORK4((qr_at(wb) + j * DK4) / 4 + a4);
        [[unroll]] for (uint e = 0; e < 4; ++e) {
          const uint a = 4 * a4 + e;
          if (a < DK) {
            precise float dka = dk[a] + pp * kj[e] + qji * qj[e], dqa = dq[a] + qij * kj[e];
            dk[a] = dka;
            dq[a] = dqa;
          }
        }
      }
    }
  }
  const float ddd = pre.segi == pre.segl && i + 1 < n ? D * skw : 0.0;
  precise float dgi = dG - bi * ze * sky + ze * sqx - ddd;
  put(dg_at(kb) + i, dgi);
  put(ddd_at(kb) + i, ddd);
  precise float db = dbv - ze * sky + get(dbr_at(kb) + i);
  dbeta[gb] = db;
  const uint pb = ((r * (F.t1 - F.t0) + t - F.t0) * F.Hv + h) * DK;
  const uint pk = F.rows * (F.t1 - F.t0) * F.Hv * DK;
  HEAD_LOOP(a) {
    partials[pb + a] = dq[a];
    partials[pk + pb + a] = dk[a];
  }
}
