#version 450
#extension GL_GOOGLE_include_directive : require
#include "gelu_params.h"

// y = gelu(x) (gelu.glsl) for CPU drivers (DeviceQuirks::texel_fetch_beats_storage_loads): four
// elements per iteration, read through an RGBA32F texel view (a branch-free gather on llvmpipe,
// where a storage load is a per-lane loop) and stored as one vec4. p.count is a multiple of 4
// (the host falls back to gelu_forward.comp otherwise). LOAD4/STORE4 are the only buffer
// accesses, so a variant with another storage type redefines them alone.
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer x_texels;
layout(std430, binding = 1) writeonly buffer Y { vec4 y4[]; };
layout(push_constant) uniform Push { GeluParams p; };

#define LOAD4_X(q) texelFetch(x_texels, int(q))
#define STORE4_Y(q, v) y4[q] = (v)

#include "gelu.glsl"

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < p.count / 4; q += stride) {
    vec4 v = LOAD4_X(q);
    STORE4_Y(q, vec4(gelu(v.x), gelu(v.y), gelu(v.z), gelu(v.w)));
  }
}
