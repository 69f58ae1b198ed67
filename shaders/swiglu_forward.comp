#version 450
#extension GL_GOOGLE_include_directive : require
#include "swiglu_params.h"
#include "swiglu.glsl"

// Llama's MLP activation (Shazeer 2020): h = silu(g) * u, g and u the gate and up projections.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer G { float g[]; };
layout(std430, binding = 1) readonly buffer U { float u[]; };
layout(std430, binding = 2) writeonly buffer H { float h[]; };
layout(push_constant) uniform Push { SwigluParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) h[i] = silu(g[i]) * u[i];
}
