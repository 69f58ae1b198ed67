#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// The gradient norm's partial sums of every parameter piece of one binding window in one
// dispatch, storage buffer: each workgroup finds its piece in the table (optimizer_table.glsl)
// and its 64 invocations write 64 of that piece's slots, each summed exactly as
// grad_norm_partial.comp sums it, into the piece's own range: the same partials, bit for bit.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Grad { float grad[]; };
layout(std430, binding = 1) writeonly buffer Partials { float partials[]; };
#include "optimizer_table.glsl"

uint gn_base;  // the piece's first float in the grad window
#define GN_WIDTH 1
#define GN_T float
float grad_at(uint j) { return grad[gn_base + j]; }

#include "grad_norm_partial.glsl"

void main() {
  const uint g = table_group();
  if (g >= p.groups) return;
  uint piece;
  TABLE_FIND(norm_group, g)
  const OptimizerPiece e = table[piece];
  const uint i = (g - e.norm_group) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= e.slots) return;
  gn_base = e.grad;
  partials[e.partials + i] = gn_slot_sum(i, e.count, e.slots);
}
