#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// First stage of the global gradient norm: invocation i sums grad[i + j * slots]^2 over j in
// increasing order into partials[i]. Each parameter tensor gets its own dispatch, bound to its
// own range of the partials buffer; grad_norm_finalize.comp then sums all slots in order. Everything is in a
// fixed order with no atomics, so the norm is bit-identical across runs.
//
// The sum is compensated (Kahan): a slot of the 38M-element token embedding sums ~10^5 squares,
// where a plain float sum would lose several digits. `precise` stops the compiler from
// reassociating the compensation away.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Grad { float grad[]; };
layout(std430, binding = 1) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { GradNormPartialParams p; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.slots) return;
  precise float sum = 0.0;
  precise float lost = 0.0;  // low-order bits lost from `sum` so far
  for (uint j = i; j < p.count; j += p.slots) {
    const float g = grad[j];
    precise float y = g * g - lost;
    precise float t = sum + y;
    lost = (t - sum) - y;
    sum = t;
  }
  partials[i] = sum;
}
