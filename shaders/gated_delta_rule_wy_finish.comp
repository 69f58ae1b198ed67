#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule backward's last pass, in fixed orders (no atomics): dq, dk of key
// head kh sum its value heads kh * ratio + 0, 1, ...; dg_m = sum of dG over the tokens of m's
// example in the block from m on (G_i sums g over them), 0 at a restart (its g decays a zero
// state), the block's last token's dG taking the end terms sum_j dDD_j + ze_last <S0, dSo> (the
// columns 0, 1, ...). Invocations: (row, step, key head, element), then (row, value head, step),
// grid-stride.
layout(push_constant) uniform Push { GatedDeltaRuleWyParams p; };
#define F p.f
#include "gated_delta_rule_wy_common.glsl"

layout(std430, binding = 7) readonly buffer Keep { vec4 keep4[]; };
layout(std430, binding = 8) readonly buffer Partials { float partials[]; };
layout(std430, binding = 9) writeonly buffer DQ { float dq[]; };
layout(std430, binding = 10) writeonly buffer DKo { float dk_out[]; };
layout(std430, binding = 11) writeonly buffer DG { float dg[]; };

float get(uint at) { return keep4[at / 4][at % 4]; }

void key_item(uint x, uint L) {
  const uint a = x % DK, tl = (x / DK) % L, kh = (x / (DK * L)) % F.Hk, r = x / (DK * L * F.Hk);
  const uint ratio = F.Hv / F.Hk, pk = F.rows * L * F.Hv * DK;
  precise float sq = 0.0, sk = 0.0;
  for (uint hh = 0; hh < ratio; ++hh) {
    const uint at = ((r * L + tl) * F.Hv + kh * ratio + hh) * DK + a;
    sq += partials[at];
    sk += partials[pk + at];
  }
  const uint o = ((r * F.T + F.t0 + tl) * F.Hk + kh) * DK + a;
  dq[o] = sq;
  dk_out[o] = sk;
}

void value_item(uint x, uint L) {
  const uint tl = x % L, h = (x / L) % F.Hv, r = x / (L * F.Hv);
  const uint b = tl / CHUNK, i = tl % CHUNK, tb = block_start(b), n = block_tokens(b);
  const uint kb = keep_base(r, h, b), t = tb + i;
  precise float acc = 0.0;
  if (!resets(r, t)) {
    uint m = i;
    for (; m < n && (m == i || !resets(r, tb + m)); ++m) acc += get(dg_at(kb) + m);
    if (m == n) {
      const Prefix pre = block_prefix(r, h, tb, n, n - 1);
      const float zl = pre.segl == 0 ? decay_exp(pre.Gl) : 0.0;
      precise float ends = 0.0, sds = 0.0;
      for (uint j = 0; j < n; ++j) ends += get(ddd_at(kb) + j);
      for (uint c = 0; c < F.dv; ++c) sds += get(sds_at(kb) + c);
      acc += ends + zl * sds;
    }
  }
  dg[gb_at(r, t, h)] = acc;
}

void main() {
  const uint L = F.t1 - F.t0;
  const uint keys = F.rows * F.Hk * L * DK, values = F.rows * F.Hv * L;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint x = gl_GlobalInvocationID.x; x < keys + values; x += stride) {
    if (x < keys)
      key_item(x, L);
    else
      value_item(x - keys, L);
  }
}
