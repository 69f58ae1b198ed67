#version 450
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

// dst[dst_offset + i] = src[src_offset + i].
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { CopyParams p; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.count) dst[p.dst_offset + i] = src[p.src_offset + i];
}
