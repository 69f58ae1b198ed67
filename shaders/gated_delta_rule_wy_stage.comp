#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_delta_rule_params.h"

// The chunkwise gated delta rule's staging pass: each token's k and q as rows of DK4 floats (the
// padding zero) in the workspace (Kr, Qr), so the passes after it read them as vec4s. One
// invocation per token (workgroups: x blocks of the range, y value heads, z rows; CHUNK
// invocations each); rows past the block's last token are zero.
layout(push_constant) uniform Push { GatedDeltaRuleWyParams p; };
#define F p.f
#include "gated_delta_rule_wy_common.glsl"

layout(std430, binding = 7) writeonly buffer Work { vec4 work4[]; };

void main() {
  const uint i = gl_LocalInvocationID.x, b = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint r = gl_WorkGroupID.z;
  const uint tb = block_start(b), n = block_tokens(b), wb = block_base(r, h, b);
  const bool live = i < n;
  const uint qk = qk_at(r, tb + min(i, n - 1), h);
  [[dont_unroll]] for (uint a4 = 0; a4 < DK4 / 4; ++a4) {
    vec4 kv = vec4(0.0), qv = vec4(0.0);
    [[unroll]] for (uint e = 0; e < 4; ++e)
      if (live && 4 * a4 + e < DK) kv[e] = k[qk + 4 * a4 + e], qv[e] = q[qk + 4 * a4 + e];
    work4[(kr_at(wb) + i * DK4) / 4 + a4] = kv;
    work4[(qr_at(wb) + i * DK4) / 4 + a4] = qv;
  }
}
