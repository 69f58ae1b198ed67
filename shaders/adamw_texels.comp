#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "optimizer_params.h"

// AdamW for CPU drivers (DeviceQuirks::texel_fetch_beats_storage_loads), four floats per
// iteration, each updated by adamw_update.glsl exactly as adamw.comp updates it. On llvmpipe a
// storage load is a per-lane loop with a bounds check while a texelFetch is a branch-free
// gather, so the gradient and the old param, m and v are all read through RGBA32F texel views
// (measured at GPT-2's c_fc and wte: 1.3-2x faster than reading param, m and v as vec4 storage
// arrays); the new values are stored through the storage bindings of the same elements. Each
// element is read and then written by one invocation only, so the views never see a value this
// dispatch wrote. p.count is a multiple of 4 (the host falls back to adamw.comp otherwise).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer Param { vec4 param4[]; };
layout(binding = 1) uniform textureBuffer Grad;
layout(std430, binding = 2) writeonly buffer M1 { vec4 m14[]; };
layout(std430, binding = 3) writeonly buffer M2 { vec4 m24[]; };
layout(binding = 6) uniform textureBuffer OldParam;
layout(binding = 7) uniform textureBuffer OldM1;
layout(binding = 8) uniform textureBuffer OldM2;
#include "adamw_update.glsl"
layout(push_constant) uniform Push { AdamWParams p; };

void main() {
  const AdamWFactors f = adamw_factors_for(p.decay, p.clip);
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count / 4; i += stride) {
    const vec4 g = texelFetch(Grad, int(i));
    vec4 pi = texelFetch(OldParam, int(i)), m = texelFetch(OldM1, int(i)),
         v = texelFetch(OldM2, int(i));
    // Unrolled: llvmpipe counts every loop iteration against a per-invocation limit.
    [[unroll]] for (int c = 0; c < 4; ++c) adamw_element(f, g[c], pi[c], m[c], v[c]);
    m14[i] = m;
    m24[i] = v;
    param4[i] = pi;
  }
}
