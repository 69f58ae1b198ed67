#version 450
#extension GL_GOOGLE_include_directive : require
#include "causal_conv1d_params.h"
#include "swiglu.glsl"

// dw[c,k] = sum over every token (r,t) whose tap k lies inside its example of
// dy(r,t) silu'(pre(r,t)) x[r, t-(K-1)+k, c]. One workgroup per channel (a grid stride over
// channels past 65535): its GROUP invocations take tokens lid, lid + GROUP, ... in order, then a
// shared-memory tree adds their partial sums in a fixed pairing. GROUP is a constant (the
// dispatch builder passes it as the workgroup size), not the device's subgroup size, so the
// summation order, and so the bits, are the same on every device and every run; no atomics.
#define GROUP CAUSAL_CONV1D_WEIGHT_GROUP
#define MAX_K CAUSAL_CONV1D_MAX_TAPS
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 4) buffer DW { float dw[]; };
layout(push_constant) uniform Push { CausalConv1dParams p; };

#include "causal_conv1d.glsl"

shared float partial[MAX_K][GROUP];

void main() {
  uint lid = gl_LocalInvocationID.x;
  uint tokens = p.rows * p.T;
  for (uint c = gl_WorkGroupID.x; c < p.C; c += gl_NumWorkGroups.x) {
    float acc[MAX_K];
    for (uint k = 0; k < MAX_K; ++k) acc[k] = 0.0;
    for (uint token = lid; token < tokens; token += GROUP) {
      uint row = token / p.T, t = token % p.T;
      float dpre = dy[token * p.C + c] * silu_grad(conv_pre(row, t, c));
      uint reach = conv_reach(row, t);
      for (uint k = 0; k < p.K; ++k) {
        uint back = p.K - 1 - k;
        if (back <= reach) acc[k] = fma(dpre, x[(token - back) * p.C + c], acc[k]);
      }
    }
    for (uint k = 0; k < p.K; ++k) partial[k][lid] = acc[k];
    barrier();
    for (uint half_ = GROUP / 2; half_ > 0; half_ /= 2) {
      if (lid < half_)
        for (uint k = 0; k < p.K; ++k) partial[k][lid] += partial[k][lid + half_];
      barrier();
    }
    if (lid < p.K) {
      uint i = c * p.K + lid;
      dw[i] = p.accumulate != 0 ? dw[i] + partial[lid][0] : partial[lid][0];
    }
    barrier();  // partial is rewritten for the next channel
  }
}
