#version 450
#extension GL_GOOGLE_include_directive : require
#include "causal_conv1d_params.h"
#include "swiglu.glsl"

// dw[c,k] = sum over every token (r,t) whose tap k lies inside its example of
// dy(r,t) silu'(pre(r,t)) x[r, t-(K-1)+k, c]. Each walk over tokens keeps the window of x in
// registers: one load of x per token, for its pre-activation and its products alike.
// SERIAL 0 (GPUs): one workgroup per channel (a grid stride past 65535); its GROUP invocations
//   each walk one contiguous GROUP-th of the rows·T tokens in order, then a shared-memory tree
//   adds their partial sums in a fixed pairing. GROUP is a constant of the kernel, not the
//   device's subgroup size.
// SERIAL 1 (CPU drivers, where barriers cost a context switch each): one invocation per channel
//   walks every token in order, no barriers; four tokens per loop iteration, because llvmpipe
//   ends an invocation after 65535 loop iterations in total (DeviceQuirks::max_loop_iterations).
// Either order is fixed, so two runs give the same bits; no atomics.
#define GROUP CAUSAL_CONV1D_WEIGHT_GROUP
#define MAX_K CAUSAL_CONV1D_MAX_TAPS
layout(local_size_x_id = 0) in;
layout(constant_id = 4) const uint SERIAL = 0;

layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 4) buffer DW { float dw[]; };
layout(push_constant) uniform Push { CausalConv1dParams p; };

#include "causal_conv1d.glsl"

shared float partial[MAX_K][GROUP];

// Adds the terms of token (row, t) to acc and steps to the next token. Row and t are carried
// rather than divided out. Past a row's end the window still holds the previous row's last
// tokens, but reach (at most t) skips every tap before the row's start.
void weight_step(inout uint row, inout uint t, uint c, float wc[MAX_K], inout float win[MAX_K],
                 inout float acc[MAX_K]) {
  if (t == p.T) ++row, t = 0;
  conv_push(win, row, t, c);
  uint reach = conv_reach(row, t);
  float dpre = dy[(row * p.T + t) * p.C + c] * silu_grad(conv_pre(win, wc, reach));
  for (uint k = 0; k < TAPS; ++k)
    if (TAPS - 1 - k <= reach) acc[k] = fma(dpre, win[k], acc[k]);
  ++t;
}

// acc = the terms of tokens [first, last) of channel c, added in order.
void walk(uint c, uint first, uint last, out float acc[MAX_K]) {
  float wc[MAX_K], win[MAX_K];
  conv_weights(wc, c);
  for (uint k = 0; k < TAPS; ++k) acc[k] = 0.0;
  if (first >= last) return;
  uint row = first / p.T, t = first % p.T;
  conv_window_start(win, row, t, c);
  uint n = last - first, i = 0;
  for (; i + 4 <= n; i += 4) {
    weight_step(row, t, c, wc, win, acc);
    weight_step(row, t, c, wc, win, acc);
    weight_step(row, t, c, wc, win, acc);
    weight_step(row, t, c, wc, win, acc);
  }
  for (; i < n; ++i) weight_step(row, t, c, wc, win, acc);
}

void write_dw(uint c, uint k, float v) {
  uint i = c * TAPS + k;
  dw[i] = p.accumulate != 0 ? dw[i] + v : v;
}

void main() {
  uint tokens = p.rows * p.T;
  float acc[MAX_K];
  if (SERIAL != 0) {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint c = gl_GlobalInvocationID.x; c < p.C; c += stride) {
      walk(c, 0, tokens, acc);
      for (uint k = 0; k < TAPS; ++k) write_dw(c, k, acc[k]);
    }
    return;
  }
  uint lid = gl_LocalInvocationID.x;
  uint span = (tokens + GROUP - 1) / GROUP;
  uint first = min(lid * span, tokens), last = min(first + span, tokens);
  for (uint c = gl_WorkGroupID.x; c < p.C; c += gl_NumWorkGroups.x) {
    walk(c, first, last, acc);
    for (uint k = 0; k < TAPS; ++k) partial[k][lid] = acc[k];
    barrier();
    for (uint half_ = GROUP / 2; half_ > 0; half_ /= 2) {
      if (lid < half_)
        for (uint k = 0; k < TAPS; ++k) partial[k][lid] += partial[k][lid + half_];
      barrier();
    }
    if (lid < TAPS) write_dw(c, lid, partial[lid][0]);
    barrier();  // partial is rewritten for the next channel
  }
}
