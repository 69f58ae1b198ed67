// Included by layernorm_forward.comp and layernorm_forward_texels.comp, which bind x, w and bias
// (bindings 0-2) as storage buffers or R32F texel views and define X(i), W(i), BIAS(i).
//
// LayerNorm over the last axis: y = (x - mean) * rstd * w + b, rstd = 1/sqrt(var + eps) with the
// biased variance (as torch.nn.LayerNorm). One invocation per row with serial loops over C: no
// shared memory and no barriers (expensive on CPU implementations), and each row is summed in
// one fixed order, so results are deterministic. The variance is a second pass over the row,
// sum((x - mean)^2), which avoids the cancellation of E[x^2] - mean^2.
#include "act16.glsl"  // y is an activation: ACT_T, fp32 unless the wrapper says otherwise
layout(local_size_x_id = 0) in;

layout(std430, binding = 3) writeonly buffer Y { ACT_T y[]; };
layout(std430, binding = 4) writeonly buffer Mean { float mean_out[]; };
layout(std430, binding = 5) writeonly buffer Rstd { float rstd_out[]; };
layout(push_constant) uniform Push { LayernormParams p; };

void main() {
  uint row = gl_GlobalInvocationID.x;
  if (row >= p.rows) return;
  uint base = row * p.C;

  float sum = 0.0;
  for (uint c = 0; c < p.C; ++c) sum += X(base + c);
  float mean = sum / float(p.C);

  float sq = 0.0;
  for (uint c = 0; c < p.C; ++c) {
    float d = X(base + c) - mean;
    sq = fma(d, d, sq);
  }
  float rstd = inversesqrt(sq / float(p.C) + p.eps);

  for (uint c = 0; c < p.C; ++c) y[base + c] = STORE_ACT((X(base + c) - mean) * rstd * W(c) + BIAS(c));
  mean_out[row] = mean;
  rstd_out[row] = rstd;
}
