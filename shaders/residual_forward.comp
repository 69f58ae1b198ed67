#version 450
#extension GL_GOOGLE_include_directive : require
#include "residual_params.h"

// y = a + scale * b: the residual connection (scale 1) or a LoRA merge (scale alpha/r).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { ResidualParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    // precise: no fused multiply-add, so the bits equal the reference's product then sum.
    precise float v = a[i] + p.scale * b[i];
    y[i] = v;
  }
}
