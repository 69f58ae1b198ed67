// Included by matmul_forward_vec4*.comp, which choose the operands' storage
// (operand_storage.glsl): A = inp, B = w4, C = out4.
#include "operand_storage.glsl"
#include "push_constants.h"

// out[M,N] = inp[M,K] * W[K,N] + bias for W in (in, out) layout with N % 4 == 0: the variant for
// CPU implementations. Each invocation owns TM rows x 4*TN4 contiguous columns and loads W four
// floats at a time; the rows depend only on the workgroup, so inp loads are uniform (one scalar
// load, broadcast). llvmpipe runs 8 invocations per SIMD instruction and pays per lane for
// non-uniform loads, so one vec4 load per lane replaces four. ldo and n_offset (MatmulParams)
// must be multiples of 4 too.
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TM = 4;   // ids 0-2 are the workgroup size
layout(constant_id = 4) const uint TN4 = 2;  // vec4 column groups per invocation

layout(std430, binding = 0) readonly buffer Inp { A_T inp[]; };
layout(std430, binding = 1) readonly buffer Wgt { B_T4 w4[]; };
layout(std430, binding = 2) readonly buffer Bias { vec4 bias4[]; };
layout(std430, binding = 3) writeonly buffer Out { C_T4 out4[]; };
layout(push_constant) uniform Push { MatmulParams p; };

const uint MAX_T = 8;

void main() {
  const uint N4 = p.N / 4;
  const uint m0 = gl_WorkGroupID.y * TM;
  const uint c0 = gl_GlobalInvocationID.x * TN4;  // first vec4 column group
  if (m0 >= p.M || c0 >= N4) return;

  vec4 acc[MAX_T][MAX_T];
  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TN4; ++j) acc[i][j] = vec4(0.0);
  uint rows[MAX_T];
  uint cols[MAX_T];
  for (uint i = 0; i < TM; ++i) rows[i] = min(m0 + i, p.M - 1) * p.K;
  for (uint j = 0; j < TN4; ++j) cols[j] = min(c0 + j, N4 - 1);

  for (uint k = 0; k < p.K; ++k) {
    vec4 b[MAX_T];
    for (uint j = 0; j < TN4; ++j) b[j] = B_LOAD4(w4[k * N4 + cols[j]]);
    for (uint i = 0; i < TM; ++i) {
      const float a = A_LOAD(inp[rows[i] + k]);
      for (uint j = 0; j < TN4; ++j) acc[i][j] = fma(vec4(a), b[j], acc[i][j]);
    }
  }

  for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + i;
    if (m >= p.M) break;
    for (uint j = 0; j < TN4; ++j) {
      const uint c = c0 + j;
      if (c >= N4) break;
      vec4 v = acc[i][j];
      if (p.has_bias != 0) v += bias4[p.n_offset / 4 + c];
      out4[(m * p.ldo + p.n_offset) / 4 + c] = C_STORE4(v);
    }
  }
}
