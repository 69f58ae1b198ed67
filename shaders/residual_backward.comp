#version 450
#extension GL_GOOGLE_include_directive : require
#include "residual_params.h"

// da = dy and db = scale * dy (scale 1 but for a LoRA merge), each overwritten or added to by its own flag: the residual stream's
// gradient usually accumulates while the branch's is fresh, or the reverse.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) buffer DA { float da[]; };
layout(std430, binding = 2) buffer DB { float db[]; };
layout(push_constant) uniform Push { ResidualBackwardParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    float g = dy[i];
    da[i] = p.accumulate_a != 0 ? da[i] + g : g;
    // precise: the product is rounded before the sum, as in the reference.
    precise float gb = p.scale * g;
    precise float sum_b = db[i] + gb;
    db[i] = p.accumulate_b != 0 ? sum_b : gb;
  }
}
