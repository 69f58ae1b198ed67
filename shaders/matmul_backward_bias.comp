#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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
  // Four rows per loop iteration, in order: llvmpipe silently ends all loops of an invocation
  // after 65535 iterations in total (LP_MAX_TGSI_LOOP_ITERATIONS), and M = B*T can exceed that.
  for (uint m0 = 0; m0 < p.M; m0 += 4) {
    [[unroll]] for (uint u = 0; u < 4; ++u) {
      if (m0 + u < p.M) acc += dout[(m0 + u) * p.N + n];
    }
  }
  dbias[n] = p.accumulate != 0 ? dbias[n] + acc : acc;
}
