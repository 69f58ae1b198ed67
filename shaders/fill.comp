#version 450
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

// dst[i] = value. Used to zero gradient accumulators and to test the dispatch path.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { FillParams p; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.count) dst[i] = p.value;
}
