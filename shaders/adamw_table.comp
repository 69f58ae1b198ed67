#version 450
#extension GL_GOOGLE_include_directive : require
#include "optimizer_params.h"

// AdamW over every parameter piece of one binding window in one dispatch, storage buffers, one
// float per iteration: each workgroup finds its piece in the table (optimizer_table.glsl) and
// runs adamw.comp's grid-stride loop over it with that piece's decay flag. Each element is
// updated by adamw_update.glsl exactly as adamw.comp updates it, so the bits are the same as
// one dispatch per parameter.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer Param { float param[]; };
layout(std430, binding = 1) readonly buffer Grad { float grad[]; };
layout(std430, binding = 2) buffer M1 { float m1[]; };
layout(std430, binding = 3) buffer M2 { float m2[]; };
#include "adamw_update.glsl"
#include "optimizer_table.glsl"

void main() {
  const uint g = table_group();
  if (g >= p.groups) return;
  uint piece;
  TABLE_FIND(adamw_group, g)
  const OptimizerPiece e = table[piece];
  const AdamWFactors f = adamw_factors_for(e.decay, p.clip);
  const uint stride = e.adamw_groups * gl_WorkGroupSize.x;
  for (uint i = (g - e.adamw_group) * gl_WorkGroupSize.x + gl_LocalInvocationID.x; i < e.count;
       i += stride) {
    float pi = param[e.param + i], m = m1[e.m + i], v = m2[e.v + i];
    adamw_element(f, grad[e.grad + i], pi, m, v);
    m1[e.m + i] = m;
    m2[e.v + i] = v;
    param[e.param + i] = pi;
  }
}
