#version 450
#extension GL_GOOGLE_include_directive : require
#include "gdn_gates_params.h"
#include "softplus.glsl"
#include "swiglu.glsl"

// Gated DeltaNet's gates (transformers' Qwen3_5GatedDeltaNet, in fp32):
// g = -exp(A_log[h]) * softplus(a + dt_bias[h]), beta = sigmoid(b). Elementwise, grid stride.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer ALog { float a_log[]; };
layout(std430, binding = 3) readonly buffer DtBias { float dt_bias[]; };
layout(std430, binding = 4) writeonly buffer G { float g[]; };
layout(std430, binding = 5) writeonly buffer Beta { float beta[]; };
layout(push_constant) uniform Push { GdnGatesParams p; };

void main() {
  uint count = p.tokens * p.heads;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    uint h = i % p.heads;
    g[i] = -exp(a_log[h]) * softplus(a[i] + dt_bias[h]);
    beta[i] = 1.0 / (1.0 + exp_neg(b[i]));
  }
}
