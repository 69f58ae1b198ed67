// Included by rmsnorm_forward.comp and rmsnorm_forward_texels.comp, which bind x and w
// (bindings 0-1) as storage buffers or R32F texel views and define X(i), W(i).
//
// RMSNorm over the last axis (Zhang & Sennrich 2019, as Llama's LlamaRMSNorm):
// y = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps). Like layernorm_forward_body.glsl: one
// invocation per row with serial loops over C, no shared memory, no barriers, and each row
// summed in one fixed order, so results are deterministic.
#include "act16.glsl"  // y is an activation: ACT_T, fp32 unless the wrapper says otherwise
layout(local_size_x_id = 0) in;

layout(std430, binding = 2) writeonly buffer Y { ACT_T y[]; };
layout(std430, binding = 3) writeonly buffer Rstd { float rstd_out[]; };
layout(push_constant) uniform Push { RmsnormParams p; };

// The gain of channel c: w, or Gemma's 1 + w. A branch rather than adding 0, so a gain of -0.0
// keeps its sign and the Llama family's bits do not move.
float gain(uint c) { return p.unit_offset != 0 ? 1.0 + W(c) : W(c); }

void main() {
  uint row = gl_GlobalInvocationID.x;
  if (row >= p.rows) return;
  uint base = row * p.C, xbase = row * p.x_stride;

  float sq = 0.0;
  for (uint c = 0; c < p.C; ++c) {
    float v = X(xbase + c);
    sq = fma(v, v, sq);
  }
  float rstd = inversesqrt(sq / float(p.C) + p.eps);

  for (uint c = 0; c < p.C; ++c) y[base + c] = STORE_ACT(X(xbase + c) * rstd * gain(c));
  rstd_out[row] = rstd;
}
