#version 450
#extension GL_GOOGLE_include_directive : require
#include "layernorm_params.h"

// layernorm_forward_body.glsl four channels per fetch: x, w and bias through RGBA32F texel
// views, y stored as vec4. For CPU drivers, where a texel fetch or a storage access costs one
// instruction per SIMD lane whatever its width (DeviceQuirks::texel_fetch_beats_storage_loads).
// The sums still run over the row's channels one at a time, and every element gets the
// operations of the scalar kernels, so the bits are theirs. C is a multiple of 4; y is fp32.
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform textureBuffer x_texels;
layout(binding = 1) uniform textureBuffer w_texels;
layout(binding = 2) uniform textureBuffer bias_texels;
layout(std430, binding = 3) writeonly buffer Y { vec4 y4[]; };
layout(std430, binding = 4) writeonly buffer Mean { float mean_out[]; };
layout(std430, binding = 5) writeonly buffer Rstd { float rstd_out[]; };
layout(push_constant) uniform Push { LayernormParams p; };

#define X4(q) texelFetch(x_texels, int(q))

void main() {
  uint row = gl_GlobalInvocationID.x;
  if (row >= p.rows) return;
  const uint C4 = p.C / 4;
  uint base = row * C4;

  float sum = 0.0;
  for (uint c = 0; c < C4; ++c) {
    vec4 x = X4(base + c);
    sum += x.x;
    sum += x.y;
    sum += x.z;
    sum += x.w;
  }
  float mean = sum / float(p.C);

  float sq = 0.0;
  for (uint c = 0; c < C4; ++c) {
    vec4 d = X4(base + c) - mean;
    sq = fma(d.x, d.x, sq);
    sq = fma(d.y, d.y, sq);
    sq = fma(d.z, d.z, sq);
    sq = fma(d.w, d.w, sq);
  }
  float rstd = inversesqrt(sq / float(p.C) + p.eps);

  for (uint c = 0; c < C4; ++c)
    y4[base + c] = (X4(base + c) - mean) * rstd * texelFetch(w_texels, int(c)) +
                   texelFetch(bias_texels, int(c));
  mean_out[row] = mean;
  rstd_out[row] = rstd;
}
