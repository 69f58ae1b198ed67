#version 450
#extension GL_GOOGLE_include_directive : require
#include "gelu_params.h"

// dx = dy * gelu'(x) (gelu.glsl) for CPU drivers, four elements per iteration as in
// gelu_forward_texels.comp. When accumulating, the old dx is read through a texel view of the
// slice this dispatch writes: each element is read, then written, by one invocation only (as in
// adamw_texels.comp), so the view never sees a value this dispatch wrote.
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer dy_texels;
layout(binding = 1) uniform textureBuffer x_texels;
layout(std430, binding = 2) writeonly buffer DX { vec4 dx4[]; };
layout(binding = 3) uniform textureBuffer old_dx_texels;
layout(push_constant) uniform Push { GeluParams p; };

#define LOAD4_DY(q) texelFetch(dy_texels, int(q))
#define LOAD4_X(q) texelFetch(x_texels, int(q))
#define LOAD4_OLD_DX(q) texelFetch(old_dx_texels, int(q))
#define STORE4_DX(q, v) dx4[q] = (v)

#include "gelu.glsl"

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < p.count / 4; q += stride) {
    vec4 v = LOAD4_X(q), d = LOAD4_DY(q);
    vec4 g = vec4(d.x * gelu_grad(v.x), d.y * gelu_grad(v.y), d.z * gelu_grad(v.z),
                  d.w * gelu_grad(v.w));
    STORE4_DX(q, p.accumulate != 0 ? LOAD4_OLD_DX(q) + g : g);
  }
}
