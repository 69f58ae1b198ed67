#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_rmsnorm_params.h"
#include "swiglu.glsl"

// do and dz of y = n * w * silu(z), n = o * rstd: with g = dy * w * silu(z) (the gradient
// reaching n), do = rstd * (g - n * mean(g * n)) as RMSNorm's, and dz = dy * n * w * silu'(z).
// One invocation per row with a grid stride; dw is gated_rmsnorm_backward_weight.comp's.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer O { float o[]; };
layout(std430, binding = 2) readonly buffer Z { float z[]; };
layout(std430, binding = 3) readonly buffer W { float w[]; };
layout(std430, binding = 4) readonly buffer Rstd { float rstd[]; };
layout(std430, binding = 5) buffer DO { float do_[]; };
layout(std430, binding = 6) buffer DZ { float dz[]; };
layout(push_constant) uniform Push { GatedRmsnormParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint row = gl_GlobalInvocationID.x; row < p.rows; row += stride) {
    uint base = row * p.D;
    float r = rstd[row];
    float gn_sum = 0.0;
    for (uint d = 0; d < p.D; ++d)
      gn_sum = fma(dy[base + d] * w[d] * silu(z[base + d]), o[base + d] * r, gn_sum);
    float gn_mean = gn_sum / float(p.D);
    for (uint d = 0; d < p.D; ++d) {
      uint i = base + d;
      float n = o[i] * r;
      float vo = (dy[i] * w[d] * silu(z[i]) - n * gn_mean) * r;
      float vz = dy[i] * (n * w[d]) * silu_grad(z[i]);
      do_[i] = p.accumulate_do != 0 ? do_[i] + vo : vo;
      dz[i] = p.accumulate_dz != 0 ? dz[i] + vz : vz;
    }
  }
}
