#version 450
#extension GL_GOOGLE_include_directive : require
#include "layernorm_params.h"

// layernorm_backward_body.glsl's two kinds of invocation, four channels per fetch: dy, x and w
// through RGBA32F texel views, dx (and dw, db) stored as vec4. For CPU drivers, where every
// texel fetch and every storage access costs one instruction per SIMD lane whatever its width
// (DeviceQuirks::texel_fetch_beats_storage_loads), so four floats per access take a quarter of
// the instructions. Every element gets the operations of the scalar kernels in the same order
// (each sum still runs over channels, or rows, one at a time), so the bits are theirs. C is a
// multiple of 4. The old dx, when accumulating, is read through a view of the slice this
// dispatch writes: each element is read, then written, by one invocation (as in
// gelu_backward_texels.comp).
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer dy_texels;    // RGBA32F
layout(binding = 1) uniform textureBuffer x_texels;     // RGBA32F
layout(binding = 2) uniform textureBuffer w_texels;     // RGBA32F
layout(binding = 3) uniform textureBuffer mean_texels;  // R32F
layout(binding = 4) uniform textureBuffer rstd_texels;  // R32F
layout(std430, binding = 5) writeonly buffer DX { vec4 dx4[]; };
layout(std430, binding = 6) buffer DW { vec4 dw4[]; };
layout(std430, binding = 7) buffer DB { vec4 db4[]; };
layout(binding = 8) uniform textureBuffer old_dx_texels;  // RGBA32F view of dx's slice
layout(push_constant) uniform Push { LayernormBackwardParams p; };

#define DY4(q) texelFetch(dy_texels, int(q))
#define X4(q) texelFetch(x_texels, int(q))
#define W4(q) texelFetch(w_texels, int(q))
#define MEAN(i) texelFetch(mean_texels, int(i)).x
#define RSTD(i) texelFetch(rstd_texels, int(i)).x

// Channel by channel, as the scalar kernel's loop adds them.
void add_channels(vec4 g, vec4 n, inout float g_sum, inout float gn_sum) {
  g_sum += g.x;
  gn_sum = fma(g.x, n.x, gn_sum);
  g_sum += g.y;
  gn_sum = fma(g.y, n.y, gn_sum);
  g_sum += g.z;
  gn_sum = fma(g.z, n.z, gn_sum);
  g_sum += g.w;
  gn_sum = fma(g.w, n.w, gn_sum);
}

void row_gradient(uint row) {
  const uint C4 = p.C / 4;
  const uint base = row * C4;
  float m = MEAN(row);
  float r = RSTD(row);
  float g_sum = 0.0;
  float gn_sum = 0.0;
  for (uint c = 0; c < C4; ++c) {
    vec4 g = DY4(base + c) * W4(c);
    vec4 n = (X4(base + c) - m) * r;
    add_channels(g, n, g_sum, gn_sum);
  }
  float g_mean = g_sum / float(p.C);
  float gn_mean = gn_sum / float(p.C);
  for (uint c = 0; c < C4; ++c) {
    vec4 g = DY4(base + c) * W4(c);
    vec4 n = (X4(base + c) - m) * r;
    vec4 v = (g - g_mean - n * gn_mean) * r;
    dx4[base + c] = p.accumulate_dx != 0 ? texelFetch(old_dx_texels, int(base + c)) + v : v;
  }
}

void add_row(uint row, uint c, inout vec4 acc_w, inout vec4 acc_b) {
  vec4 d = DY4(row * (p.C / 4) + c);
  vec4 n = (X4(row * (p.C / 4) + c) - MEAN(row)) * RSTD(row);
  acc_w += d * n;
  acc_b += d;
}

// Channels 4c..4c+3, each summed over rows 0, 1, 2, ... in order.
void channel_gradient(uint c) {
  vec4 acc_w = p.accumulate_dw != 0 ? dw4[c] : vec4(0.0);
  vec4 acc_b = p.accumulate_dw != 0 ? db4[c] : vec4(0.0);
  // Four rows per iteration: llvmpipe's 65535-iteration limit (layernorm_backward_body.glsl).
  uint row = 0;
  for (; row + 4 <= p.rows; row += 4) {
    add_row(row, c, acc_w, acc_b);
    add_row(row + 1, c, acc_w, acc_b);
    add_row(row + 2, c, acc_w, acc_b);
    add_row(row + 3, c, acc_w, acc_b);
  }
  for (; row < p.rows; ++row) add_row(row, c, acc_w, acc_b);
  dw4[c] = acc_w;
  db4[c] = acc_b;
}

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint wg = gl_WorkGroupSize.x;
  uint row_invocations = ((p.rows + wg - 1) / wg) * wg;
  if (i < row_invocations) {
    if (i < p.rows) row_gradient(i);
  } else {
    uint c = i - row_invocations;
    if (c < p.C / 4) channel_gradient(c);
  }
}
