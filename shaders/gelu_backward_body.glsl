// Included by gelu_backward.comp and its f16/bf16 wrappers (act16.glsl: x is an activation;
// dy and dx are gradients, always fp32).
// dx = dy * gelu'(x) (gelu.glsl), one element per iteration through storage buffers.
#include "act16.glsl"
#include "gelu_params.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { ACT_T x[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };
layout(push_constant) uniform Push { GeluParams p; };

#include "gelu.glsl"

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float g = dy[i] * gelu_grad(LOAD_ACT(x[i]));
    dx[i] = p.accumulate != 0 ? dx[i] + g : g;
  }
}
