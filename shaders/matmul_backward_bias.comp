#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul_backward_params.h"

// dbias[N] (+)= sum over m of dout[m, :]. One invocation per column, summing m = 0..M-1 in
// order: deterministic, no atomics. Neighbouring invocations read neighbouring columns, so each
// row of dout is read contiguously across a workgroup.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Dout { float dout[]; };
layout(std430, binding = 1) buffer Dbias { float dbias[]; };
layout(push_constant) uniform Push { MatmulBackwardParams p; };

void main() {
  uint n = gl_GlobalInvocationID.x;
  if (n >= p.N) return;
  float acc = 0.0;
  for (uint m = 0; m < p.M; ++m) acc += dout[m * p.N + n];
  dbias[n] = p.accumulate != 0 ? dbias[n] + acc : acc;
}
