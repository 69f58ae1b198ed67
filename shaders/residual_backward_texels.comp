#version 450
#extension GL_GOOGLE_include_directive : require
#include "residual_params.h"

// da (=|+=) dy and db (=|+=) scale * dy (residual_backward.comp) for CPU drivers, four elements
// per iteration as in residual_forward_texels.comp. The old da and db are read through texel
// views of the slices this dispatch writes: each element is read, then written, by one
// invocation only, so a view never sees a value this dispatch wrote.
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer dy_texels;
layout(std430, binding = 1) writeonly buffer DA { vec4 da4[]; };
layout(std430, binding = 2) writeonly buffer DB { vec4 db4[]; };
layout(binding = 3) uniform textureBuffer old_da_texels;
layout(binding = 4) uniform textureBuffer old_db_texels;
layout(push_constant) uniform Push { ResidualBackwardParams p; };

#define LOAD4_DY(q) texelFetch(dy_texels, int(q))
#define LOAD4_OLD_DA(q) texelFetch(old_da_texels, int(q))
#define LOAD4_OLD_DB(q) texelFetch(old_db_texels, int(q))
#define STORE4_DA(q, v) da4[q] = (v)
#define STORE4_DB(q, v) db4[q] = (v)

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint q = gl_GlobalInvocationID.x; q < p.count / 4; q += stride) {
    vec4 g = LOAD4_DY(q);
    STORE4_DA(q, p.accumulate_a != 0 ? LOAD4_OLD_DA(q) + g : g);
    // precise: the product is rounded before the sum, as in the storage kernel.
    precise vec4 gb = p.scale * g;
    if (p.accumulate_b != 0) {
      precise vec4 sum_b = LOAD4_OLD_DB(q) + gb;
      STORE4_DB(q, sum_b);
    } else {
      STORE4_DB(q, gb);
    }
  }
}
