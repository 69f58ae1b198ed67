#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// The gradient norm's partial sums of one tensor over a storage buffer: invocation i writes
// slot i (the loop is grad_norm_partial.glsl).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Grad { float grad[]; };
layout(std430, binding = 1) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { GradNormPartialParams p; };
#define GN_WIDTH 1
#define GN_T float
float grad_at(uint j) { return grad[j]; }

#include "grad_norm_partial.glsl"

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.slots) return;
  partials[i] = gn_slot_sum(i, p.count, p.slots);
}
