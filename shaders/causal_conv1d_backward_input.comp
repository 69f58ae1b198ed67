#version 450
#extension GL_GOOGLE_include_directive : require
#include "causal_conv1d_params.h"
#include "swiglu.glsl"

// dx of y = silu(conv1d(x)). Token t' feeds the outputs t' + j (j = 0 .. K-1) of its own example
// through the tap w[c, K-1-j]: dx = sum over j in that order of dpre(t'+j) w[c, K-1-j], with
// dpre = dy silu'(pre) and the pre-activations recomputed rather than stored. One invocation
// walks the tokens of a CHUNK of one channel plus the TAPS - 1 after it, computing each pre and
// dpre once (x window in registers) and adding each dpre into the running dx of the TAPS tokens
// it feeds (acc[k]: token t - (TAPS-1) + k), so every dx gets its terms in increasing t, that is
// increasing j. Neighbouring invocations take neighbouring channels. Grid stride.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 4) buffer DX { float dx[]; };
layout(push_constant) uniform Push { CausalConv1dParams p; };

#include "causal_conv1d.glsl"

// acc[k] is the finished dx of token t_k; written when t_k lies in [t0, t_end).
void write_dx(uint row, int t_k, uint t0, uint t_end, uint c, float v) {
  if (t_k < int(t0) || t_k >= int(t_end)) return;
  uint i = (row * p.T + uint(t_k)) * p.C + c;
  dx[i] = p.accumulate != 0 ? dx[i] + v : v;
}

void main() {
  uint chunks = (p.T + CAUSAL_CONV1D_CHUNK - 1) / CAUSAL_CONV1D_CHUNK;
  uint count = p.rows * chunks * p.C;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    uint c = i % p.C;
    uint row = i / p.C / chunks;
    uint t0 = (i / p.C) % chunks * CAUSAL_CONV1D_CHUNK;
    uint t_end = min(t0 + CAUSAL_CONV1D_CHUNK, p.T);
    uint walk_end = min(t_end + TAPS - 1, p.T);
    float wc[CAUSAL_CONV1D_MAX_TAPS], win[CAUSAL_CONV1D_MAX_TAPS], acc[CAUSAL_CONV1D_MAX_TAPS];
    conv_weights(wc, c);
    conv_window_start(win, row, t0, c);
    for (uint k = 0; k < TAPS; ++k) acc[k] = 0.0;
    for (uint t = t0; t < walk_end; ++t) {
      // acc[0] (token t - TAPS) got its last term at t - 1: write it, shift, open token t.
      write_dx(row, int(t) - int(TAPS), t0, t_end, c, acc[0]);
      for (uint k = 0; k + 1 < TAPS; ++k) acc[k] = acc[k + 1];
      acc[TAPS - 1] = 0.0;
      conv_push(win, row, t, c);
      uint reach = conv_reach(row, t);
      float dpre = dy[(row * p.T + t) * p.C + c] * silu_grad(conv_pre(win, wc, reach));
      for (uint j = 0; j < TAPS; ++j)  // token t - j, through tap K-1-j, inside the example
        if (j <= reach) acc[TAPS - 1 - j] = fma(dpre, wc[TAPS - 1 - j], acc[TAPS - 1 - j]);
    }
    for (uint k = 0; k < TAPS; ++k)
      write_dx(row, int(walk_end) - int(TAPS) + int(k), t0, t_end, c, acc[k]);
  }
}
