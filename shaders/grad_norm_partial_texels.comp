#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// The gradient norm's partial sums for CPU drivers (DeviceQuirks::
// texel_fetch_beats_storage_loads): the gradient is read through an RGBA32F texel view, a
// branch-free gather on llvmpipe where a storage load is a per-lane loop. Slots are a multiple
// of 4, so texel j holds one float of each of four consecutive slots, and invocation i keeps
// those four slots' sums (grad_norm_partial.glsl, componentwise): each slot adds the same
// squares in the same order as grad_norm_partial.comp, bit for bit. p.count is a multiple of 4
// (the host falls back to grad_norm_partial.comp otherwise).
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer Grad;
layout(std430, binding = 1) writeonly buffer Partials { float partials[]; };
layout(push_constant) uniform Push { GradNormPartialParams p; };
#define GN_WIDTH 4
#define GN_T vec4
vec4 grad_at(uint j) { return texelFetch(Grad, int(j)); }

#include "grad_norm_partial.glsl"

void main() {
  // Invocation i owns slots 4i to 4i + 3.
  const uint i = gl_GlobalInvocationID.x;
  if (i >= p.slots / 4) return;
  const vec4 sum = gn_slot_sum(i, p.count / 4, p.slots / 4);
  partials[4 * i] = sum.x;
  partials[4 * i + 1] = sum.y;
  partials[4 * i + 2] = sum.z;
  partials[4 * i + 3] = sum.w;
}
