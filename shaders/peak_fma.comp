#version 450
#extension GL_GOOGLE_include_directive : require
#include "roofline_params.h"

// Peak arithmetic rate: 8 independent FMA chains per invocation (two vec4s, enough to hide FMA
// latency), unrolled 16 steps per loop iteration, one store at the end. a and b are push
// constants, so the compiler cannot fold the chain away.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Out { float out_[]; };
layout(push_constant) uniform Push { PeakFmaParams p; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= p.count) return;
  float x = float(i);
  vec4 u = vec4(x, x + 1.0, x + 2.0, x + 3.0);
  vec4 v = vec4(x + 4.0, x + 5.0, x + 6.0, x + 7.0);
  vec4 a = vec4(p.a), b = vec4(p.b);
  for (uint it = 0; it < p.iterations; ++it) {
    u = fma(u, a, b); v = fma(v, a, b); u = fma(u, a, b); v = fma(v, a, b);
    u = fma(u, a, b); v = fma(v, a, b); u = fma(u, a, b); v = fma(v, a, b);
    u = fma(u, a, b); v = fma(v, a, b); u = fma(u, a, b); v = fma(v, a, b);
    u = fma(u, a, b); v = fma(v, a, b); u = fma(u, a, b); v = fma(v, a, b);
    u = fma(u, a, b); v = fma(v, a, b); u = fma(u, a, b); v = fma(v, a, b);
    u = fma(u, a, b); v = fma(v, a, b); u = fma(u, a, b); v = fma(v, a, b);
    u = fma(u, a, b); v = fma(v, a, b); u = fma(u, a, b); v = fma(v, a, b);
    u = fma(u, a, b); v = fma(v, a, b); u = fma(u, a, b); v = fma(v, a, b);
  }
  vec4 s = u + v;
  out_[i] = (s.x + s.y) + (s.z + s.w);
}
