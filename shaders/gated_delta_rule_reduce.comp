#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_delta_rule_params.h"

// Finishes gated_delta_rule_backward.comp's sums in one fixed order, so gradients are the same bits
// run to run and whatever the range is split into: dq, dk of key head kh at step t sum its value
// heads kh * ratio + 0, 1, ... and within each the column blocks 0, 1, ...; dg, dbeta sum the
// columns 0, 1, ... Invocations: first (row, key head, t, i) for dq and dk, then (row, value
// head, t) for dg and dbeta, grid-stride.
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push { GatedDeltaRuleReduceParams p; };

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };
layout(std430, binding = 1) writeonly buffer DQ { float dq[]; };
layout(std430, binding = 2) writeonly buffer DK { float dk_out[]; };
layout(std430, binding = 3) writeonly buffer DG { float dg[]; };
layout(std430, binding = 4) writeonly buffer DBeta { float dbeta[]; };

void key_item(uint n, uint L) {
  const uint i = n % p.dk, tl = (n / p.dk) % L, kh = (n / (p.dk * L)) % p.Hk;
  const uint r = n / (p.dk * L * p.Hk), ratio = p.Hv / p.Hk;
  precise float sq = 0.0, sk = 0.0;
  for (uint hh = 0; hh < ratio; ++hh) {
    const uint head = r * p.Hv + kh * ratio + hh;
    for (uint blk = 0; blk < p.blocks; ++blk) {
      const uint base = ((head * p.blocks + blk) * L + tl) * 2 * p.dk;
      sq += partials[base + i];
      sk += partials[base + p.dk + i];
    }
  }
  const uint o = ((r * p.T + p.t0 + tl) * p.Hk + kh) * p.dk + i;
  dq[o] = sq;
  dk_out[o] = sk;
}

void value_item(uint n, uint L) {
  const uint tl = n % L, head = n / L, h = head % p.Hv, r = head / p.Hv;
  const uint base = p.rows * p.Hv * p.blocks * L * 2 * p.dk + (head * L + tl) * p.dv * 2;
  precise float sg = 0.0, sb = 0.0;
  for (uint c = 0; c < p.dv; ++c) {
    sg += partials[base + 2 * c];
    sb += partials[base + 2 * c + 1];
  }
  const uint o = (r * p.T + p.t0 + tl) * p.Hv + h;
  dg[o] = sg;
  dbeta[o] = sb;
}

void main() {
  const uint L = p.t1 - p.t0;
  const uint keys = p.rows * p.Hk * L * p.dk, values = p.rows * p.Hv * L;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint n = gl_GlobalInvocationID.x; n < keys + values; n += stride) {
    if (n < keys)
      key_item(n, L);
    else
      value_item(n - keys, L);
  }
}
