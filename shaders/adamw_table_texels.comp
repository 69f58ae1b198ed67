#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "optimizer_params.h"

// adamw_table.comp for CPU drivers, reading as adamw_texels.comp reads (the gradient and the
// old param, m and v through RGBA32F texel views of the windows, four floats per iteration, new
// values stored as vec4): the host uses it only when every piece's count and offsets are
// multiples of 4, so piece offsets are whole texels. Same expressions per element, same bits.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer Param { vec4 param4[]; };
layout(binding = 1) uniform textureBuffer Grad;
layout(std430, binding = 2) writeonly buffer M1 { vec4 m14[]; };
layout(std430, binding = 3) writeonly buffer M2 { vec4 m24[]; };
layout(binding = 6) uniform textureBuffer OldParam;
layout(binding = 7) uniform textureBuffer OldM1;
layout(binding = 8) uniform textureBuffer OldM2;
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
  const uint pp = e.param / 4, gg = e.grad / 4, mm = e.m / 4, vv = e.v / 4;
  for (uint i = (g - e.adamw_group) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
       i < e.count / 4; i += stride) {
    const vec4 gr = texelFetch(Grad, int(gg + i));
    vec4 pi = texelFetch(OldParam, int(pp + i)), m = texelFetch(OldM1, int(mm + i)),
         v = texelFetch(OldM2, int(vv + i));
    // Unrolled: llvmpipe counts every loop iteration against a per-invocation limit.
    [[unroll]] for (int c = 0; c < 4; ++c) adamw_element(f, gr[c], pi[c], m[c], v[c]);
    m14[mm + i] = m;
    m24[vv + i] = v;
    param4[pp + i] = pi;
  }
}
