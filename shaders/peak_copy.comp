#version 450
#extension GL_GOOGLE_include_directive : require
#include "roofline_params.h"

// Peak streaming bandwidth: dst[i] = src[i] over vec4 elements, grid-stride, no arithmetic.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { vec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { vec4 dst[]; };
layout(push_constant) uniform Push { PeakCopyParams p; };

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) dst[i] = src[i];
}
