#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_rmsnorm_params.h"
#include "swiglu.glsl"

// Gated DeltaNet's output norm (transformers' Qwen3_5RMSNormGated, "norm before gate"):
// y = ((o * rstd) * w) * silu(z), rstd = 1/sqrt(mean(o^2) + eps), saved for the backward. One
// invocation per row (token, value head) with a grid stride, serial loops over D.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer O { float o[]; };
layout(std430, binding = 1) readonly buffer Z { float z[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Rstd { float rstd_out[]; };
layout(push_constant) uniform Push { GatedRmsnormParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint row = gl_GlobalInvocationID.x; row < p.rows; row += stride) {
    uint base = row * p.D;
    float sq = 0.0;
    for (uint d = 0; d < p.D; ++d) sq = fma(o[base + d], o[base + d], sq);
    float rstd = inversesqrt(sq / float(p.D) + p.eps);
    for (uint d = 0; d < p.D; ++d)
      y[base + d] = ((o[base + d] * rstd) * w[d]) * silu(z[base + d]);
    rstd_out[row] = rstd;
  }
}
