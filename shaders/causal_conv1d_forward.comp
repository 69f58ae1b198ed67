#version 450
#extension GL_GOOGLE_include_directive : require
#include "causal_conv1d_params.h"
#include "swiglu.glsl"

// y = silu(causal depthwise conv1d of x). One invocation walks CHUNK consecutive tokens of one
// channel, its window in registers (one load of x per token; the TAPS - 1 before the chunk once);
// neighbouring invocations take neighbouring channels, so loads coalesce. Grid stride.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { CausalConv1dParams p; };

#include "causal_conv1d.glsl"

void main() {
  uint chunks = (p.T + CAUSAL_CONV1D_CHUNK - 1) / CAUSAL_CONV1D_CHUNK;
  uint count = p.rows * chunks * p.C;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    uint c = i % p.C;
    uint row = i / p.C / chunks;
    uint t0 = (i / p.C) % chunks * CAUSAL_CONV1D_CHUNK;
    uint t_end = min(t0 + CAUSAL_CONV1D_CHUNK, p.T);
    float wc[CAUSAL_CONV1D_MAX_TAPS], win[CAUSAL_CONV1D_MAX_TAPS];
    conv_weights(wc, c);
    conv_window_start(win, row, t0, c);
    for (uint t = t0; t < t_end; ++t) {
      conv_push(win, row, t, c);
      y[(row * p.T + t) * p.C + c] = silu(conv_pre(win, wc, conv_reach(row, t)));
    }
  }
}
