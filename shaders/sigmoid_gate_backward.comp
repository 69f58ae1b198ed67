#version 450
#extension GL_GOOGLE_include_directive : require
#include "sigmoid_gate_params.h"
#include "swiglu.glsl"

// dx = dy * s, dgate = dy * x * s * (1 - s), s = sigmoid(gate), 1 - s formed as exp(-gate) s
// (accurate where s nears 1). Elementwise, grid stride; dgate lands at the gate's own place.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Gate { float gate[]; };
layout(std430, binding = 3) buffer DX { float dx[]; };
layout(std430, binding = 4) buffer DGate { float dgate[]; };
layout(push_constant) uniform Push { SigmoidGateParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    uint j = (i / p.D) * p.gate_head_stride + p.gate_offset + i % p.D;
    float e = exp_neg(gate[j]);
    float s = 1.0 / (1.0 + e);
    float vx = dy[i] * s;
    float vg = dy[i] * x[i] * s * (e * s);
    dx[i] = p.accumulate_dx != 0 ? dx[i] + vx : vx;
    dgate[j] = p.accumulate_dgate != 0 ? dgate[j] + vg : vg;
  }
}
