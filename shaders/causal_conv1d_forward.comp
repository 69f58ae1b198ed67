#version 450
#extension GL_GOOGLE_include_directive : require
#include "causal_conv1d_params.h"
#include "swiglu.glsl"

// y = silu(causal depthwise conv1d of x), elementwise over [rows, T, C] with a grid stride.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { CausalConv1dParams p; };

#include "causal_conv1d.glsl"

void main() {
  uint count = p.rows * p.T * p.C;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    uint c = i % p.C;
    uint token = i / p.C;
    y[i] = silu(conv_pre(token / p.T, token % p.T, c));
  }
}
