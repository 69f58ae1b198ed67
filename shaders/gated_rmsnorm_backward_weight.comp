#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_rmsnorm_params.h"
#include "swiglu.glsl"

// dw[d] = sum over rows of dy * (o * rstd) * silu(z). One workgroup per channel d (a grid stride
// past 65535): invocation lid takes rows lid, lid + GROUP, ... in order, then a shared-memory
// tree in a fixed pairing adds the partial sums. GROUP is a constant, so the order, and the
// bits, are the same on every device and run; no atomics.
#define GROUP GATED_RMSNORM_WEIGHT_GROUP
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer O { float o[]; };
layout(std430, binding = 2) readonly buffer Z { float z[]; };
layout(std430, binding = 3) readonly buffer Rstd { float rstd[]; };
layout(std430, binding = 4) buffer DW { float dw[]; };
layout(push_constant) uniform Push { GatedRmsnormParams p; };

shared float partial[GROUP];

void main() {
  uint lid = gl_LocalInvocationID.x;
  for (uint d = gl_WorkGroupID.x; d < p.D; d += gl_NumWorkGroups.x) {
    float acc = 0.0;
    for (uint row = lid; row < p.rows; row += GROUP) {
      uint i = row * p.D + d;
      acc = fma(dy[i], (o[i] * rstd[row]) * silu(z[i]), acc);
    }
    partial[lid] = acc;
    barrier();
    for (uint half_ = GROUP / 2; half_ > 0; half_ /= 2) {
      if (lid < half_) partial[lid] += partial[lid + half_];
      barrier();
    }
    if (lid == 0) dw[d] = p.accumulate_dw != 0 ? dw[d] + partial[0] : partial[0];
    barrier();  // partial is rewritten for the next channel
  }
}
