#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// grad_norm_table.comp for CPU drivers, reading as grad_norm_partial_texels.comp reads (an
// RGBA32F texel view of the grad window, four slots per invocation): the host uses it only when
// every piece's count and offset are multiples of 4. Same sums in the same order, same bits.
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer Grad;
layout(std430, binding = 1) writeonly buffer Partials { float partials[]; };
#include "optimizer_table.glsl"

uint gn_base;  // the piece's first texel in the grad window
#define GN_WIDTH 4
#define GN_T vec4
vec4 grad_at(uint j) { return texelFetch(Grad, int(gn_base + j)); }

#include "grad_norm_partial.glsl"

void main() {
  const uint g = table_group();
  if (g >= p.groups) return;
  uint piece;
  TABLE_FIND(norm_group, g)
  const OptimizerPiece e = table[piece];
  // Invocation i owns the piece's slots 4i to 4i + 3.
  const uint i = (g - e.norm_group) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= e.slots / 4) return;
  gn_base = e.grad / 4;
  const vec4 sum = gn_slot_sum(i, e.count / 4, e.slots / 4);
  const uint o = e.partials + 4 * i;
  partials[o] = sum.x;
  partials[o + 1] = sum.y;
  partials[o + 2] = sum.z;
  partials[o + 3] = sum.w;
}
