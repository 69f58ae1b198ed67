// Included by gated_delta_rule_wy_prepare.comp (storage buffers) and
// gated_delta_rule_wy_prepare_texels.comp (k_j read through a texel view).
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule's first pass: per (row, value head, block) A, M, Kd, Qz and ze
// (gated_delta_rule_wy_common.glsl), one invocation per token i of the block (workgroups: x
// blocks of the range, y value heads, z rows; CHUNK invocations each). G restarts at each
// example, so Gamma_ij = decay_exp(G_i - G_j) is only ever taken within one: the difference, never
// exp(-G_j) alone, which overflows.
layout(push_constant) uniform Push { GatedDeltaRuleWyParams p; };
#define F p.f
#include "gated_delta_rule_wy_common.glsl"

layout(std430, binding = 7) writeonly buffer Work { float work[]; };
// The same scratch again, for the reads: Kr, which gated_delta_rule_wy_stage.comp wrote.
#ifdef TEXELS
layout(binding = 8) uniform textureBuffer work_texels;  // RGBA32F view
#define WORK4R(i) texelFetch(work_texels, int(i))
#else
layout(std430, binding = 8) readonly buffer WorkIn { vec4 work4r[]; };
#define WORK4R(i) work4r[i]
#endif

float ki[DK], qi[DK];

void main() {
  const uint i = gl_LocalInvocationID.x, b = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint r = gl_WorkGroupID.z;
  const uint tb = block_start(b), n = block_tokens(b), wb = block_base(r, h, b);
  const bool live = i < n;

  const Prefix pre = block_prefix(r, h, tb, n, i);
  const uint segi = pre.segi, segl = pre.segl;
  const float Gi = pre.Gi, Gl = pre.Gl;

  const uint qk = qk_at(r, tb + min(i, n - 1), h);
  HEAD_LOOP(a) {
    ki[a] = live ? k[qk + a] : 0.0;
    qi[a] = live ? q[qk + a] : 0.0;
  }
  const float bi = live ? beta[gb_at(r, tb + i, h)] : 0.0;

  uint seg = 0;
  precise float G = 0.0;
  [[dont_unroll]] for (uint j = 0; j < CHUNK; ++j) {
    if (j < n) {
      if (resets(r, tb + j)) {
        ++seg;
        G = 0.0;
      } else {
        G += g[gb_at(r, tb + j, h)];
      }
    }
    precise float aij = 0.0, mij = 0.0;
    if (live && j <= i && seg == segi) {
      precise float kk = 0.0, qkj = 0.0;
      [[dont_unroll]] for (uint a4 = 0; a4 < DK4 / 4; ++a4) {
        const vec4 kj = WORK4R((kr_at(wb) + j * DK4) / 4 + a4);
        [[unroll]] for (uint e = 0; e < 4; ++e) {
          const uint a = 4 * a4 + e;
          if (a < DK) {
            kk = fma(ki[a], kj[e], kk);
            qkj = fma(qi[a], kj[e], qkj);
          }
        }
      }
      precise float gam = decay_exp(Gi - G);
      if (j < i) aij = bi * gam * kk;
      mij = gam * qkj;
    }
    work[a_at(wb) + i * CHUNK + j] = aij;
    work[m_at(wb) + i * CHUNK + j] = mij;
  }

  precise float d = live && segi == segl ? decay_exp(Gl - Gi) : 0.0;
  precise float ze = live && segi == 0 ? decay_exp(Gi) : 0.0;
  HEAD_LOOP(a) {
    precise float x = d * ki[a], y = ze * qi[a];
    work[kd_at(wb) + i * DK4 + a] = x;
    work[qz_at(wb) + i * DK4 + a] = y;
  }
  for (uint a = DK; a < DK4; ++a) work[kd_at(wb) + i * DK4 + a] = work[qz_at(wb) + i * DK4 + a] = 0.0;
  work[ze_at(wb) + i] = ze;
}
