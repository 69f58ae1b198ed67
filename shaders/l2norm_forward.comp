#version 450
#extension GL_GOOGLE_include_directive : require
#include "l2norm_params.h"

// y = x * r * scale, r = 1/sqrt(sum x^2 + eps), one invocation per (token, head) row with a grid
// stride, serial loops over D: no shared memory, no barriers, one fixed order.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { L2normParams p; };

#include "l2norm.glsl"

void main() {
  uint rows = p.tokens * p.heads;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint row = gl_GlobalInvocationID.x; row < rows; row += stride) {
    uint base = l2_base(row);
    float r = l2_inverse_norm(base);
    for (uint d = 0; d < p.D; ++d) y[row * p.D + d] = (x[base + d] * r) * p.scale;
  }
}
