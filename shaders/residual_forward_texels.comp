#version 450
#extension GL_GOOGLE_include_directive : require
#include "residual_params.h"

// y = a + scale * b (residual_forward.comp) for CPU drivers
// (DeviceQuirks::texel_fetch_beats_storage_loads): four elements per iteration, a and b read
// through RGBA32F texel views, y stored as one vec4. p.count is a multiple of 4 (the host falls
// back to residual_forward.comp otherwise).
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer a_texels;
layout(binding = 1) uniform textureBuffer b_texels;
layout(std430, binding = 2) writeonly buffer Y { vec4 y4[]; };
layout(push_constant) uniform Push { ResidualParams p; };

#define LOAD4_A(q) texelFetch(a_texels, int(q))
#define LOAD4_B(q) texelFetch(b_texels, int(q))
#define STORE4_Y(q, v) y4[q] = (v)

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < p.count / 4; q += stride) {
    // precise: no fused multiply-add, so the bits equal the storage kernel's product then sum.
    precise vec4 v = LOAD4_A(q) + p.scale * LOAD4_B(q);
    STORE4_Y(q, v);
  }
}
