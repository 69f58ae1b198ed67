#version 450
#extension GL_GOOGLE_include_directive : require
#include "causal_conv1d_params.h"
#include "swiglu.glsl"

// dx of y = silu(conv1d(x)), elementwise over [rows, T, C] with a grid stride. Token t' feeds
// the outputs t' + j (j = 0 .. K-1) of its own example through the tap w[c, K-1-j];
// dx = sum over j in that order of dy(t'+j) silu'(pre(t'+j)) w[c, K-1-j], the pre-activations
// recomputed (K taps each) rather than stored.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 4) buffer DX { float dx[]; };
layout(push_constant) uniform Push { CausalConv1dParams p; };

#include "causal_conv1d.glsl"

float input_gradient(uint row, uint t, uint c) {
  float acc = 0.0;
  for (uint j = 0; j < p.K && t + j < p.T; ++j) {
    uint out_t = t + j;
    if (j > conv_reach(row, out_t)) continue;  // output out_t's window starts after t
    float dpre = dy[(row * p.T + out_t) * p.C + c] * silu_grad(conv_pre(row, out_t, c));
    acc = fma(dpre, w[c * p.K + p.K - 1 - j], acc);
  }
  return acc;
}

void main() {
  uint count = p.rows * p.T * p.C;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    uint c = i % p.C;
    uint token = i / p.C;
    float v = input_gradient(token / p.T, token % p.T, c);
    dx[i] = p.accumulate != 0 ? dx[i] + v : v;
  }
}
