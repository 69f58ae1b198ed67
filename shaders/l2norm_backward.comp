#version 450
#extension GL_GOOGLE_include_directive : require
#include "l2norm_params.h"

// dx of y = scale * x * r, r = (sum x^2 + eps)^(-1/2): with n = x r and dr/dx = -r^3 x,
// dx = scale * r * (dy - n * sum(dy * n)). One invocation per (token, head) row, r recomputed
// exactly as the forward's; dx written at x's own strided place.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };
layout(push_constant) uniform Push { L2normParams p; };

#include "l2norm.glsl"

void main() {
  uint rows = p.tokens * p.heads;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint row = gl_GlobalInvocationID.x; row < rows; row += stride) {
    uint base = l2_base(row);
    float r = l2_inverse_norm(base);
    float dot_dn = 0.0;
    for (uint d = 0; d < p.D; ++d) dot_dn = fma(dy[row * p.D + d], x[base + d] * r, dot_dn);
    for (uint d = 0; d < p.D; ++d) {
      float v = (dy[row * p.D + d] - (x[base + d] * r) * dot_dn) * (r * p.scale);
      dx[base + d] = p.accumulate != 0 ? dx[base + d] + v : v;
    }
  }
}
