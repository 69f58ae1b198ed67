#version 450
#extension GL_GOOGLE_include_directive : require
#include "gelu_params.h"

// y = gelu(x) (gelu.glsl), one element per iteration through storage buffers.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { GeluParams p; };

#include "gelu.glsl"

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) y[i] = gelu(x[i]);
}
