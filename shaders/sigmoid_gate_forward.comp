#version 450
#extension GL_GOOGLE_include_directive : require
#include "sigmoid_gate_params.h"
#include "swiglu.glsl"

// The gated attention's output gate: y = x * sigmoid(gate). Elementwise, grid stride.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Gate { float gate[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { SigmoidGateParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    uint j = (i / p.D) * p.gate_head_stride + p.gate_offset + i % p.D;
    y[i] = x[i] * (1.0 / (1.0 + exp_neg(gate[j])));
  }
}
