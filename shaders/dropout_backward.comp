#version 450
#extension GL_GOOGLE_include_directive : require
#include "dropout_params.h"

// dx = dy * mask / (1 - p), regenerating the forward's mask from the same Philox key and
// counters (dropout_forward.comp); dx is overwritten or added to by `accumulate`.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) buffer DX { float dx[]; };
layout(std430, binding = 2) readonly buffer Steps { uint steps[]; };
layout(push_constant) uniform Push { DropoutParams p; };

#include "philox.glsl"

void main() {
  uint quads = (p.count + 3) / 4;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint step = p.step + (p.step_from_buffer != 0 ? steps[p.step_word] : 0u);
  for (uint q = gl_GlobalInvocationID.x; q < quads; q += stride) {
    uvec4 r = philox4x32_10(uvec4(q, step, p.op_id, 0u), uvec2(p.seed_lo, p.seed_hi));
    for (uint j = 0; j < 4; ++j) {
      uint i = q * 4 + j;
      if (i >= p.count) break;
      float g = r[j] < p.threshold ? 0.0 : dy[i] * p.scale;
      dx[i] = p.accumulate != 0 ? dx[i] + g : g;
    }
  }
}
