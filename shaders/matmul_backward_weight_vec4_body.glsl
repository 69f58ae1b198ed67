// Included by matmul_backward_weight_vec4*.comp, which choose the operands' storage (operand_storage.glsl):
// A = dout (f32), B = inp (an activation: f32, f16 or bf16), dW f32.
#include "operand_storage.glsl"
#include "matmul_backward_params.h"

// dW[K,N] (+)= inp^T * dout for W in (in, out) layout with N % 4 == 0 and K % 4 == 0: the
// variant for CPU implementations. Each invocation owns TK rows (a multiple of 4, uniform across
// the workgroup) x 4*TN4 contiguous columns, and walks m from 0 to M-1 like
// matmul_backward_weight.comp, in the same order, so both give the same bits. Loads are vec4 on
// both sides: llvmpipe turns every buffer load into a per-lane scalar loop, so the count of load
// instructions, not their width, sets the speed there. ld_dout and n_offset must be multiples of
// 4 too.
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TK = 8;   // ids 0-2 are the workgroup size; a multiple of 4
layout(constant_id = 4) const uint TN4 = 2;  // vec4 column groups per invocation

layout(std430, binding = 0) readonly buffer Dout { A_T4 dout4[]; };
layout(std430, binding = 1) readonly buffer Inp { B_T4 inp4[]; };
layout(std430, binding = 2) buffer Dw { vec4 dw4[]; };
layout(push_constant) uniform Push { MatmulBackwardParams p; };

const uint MAX_K4 = 4;
const uint MAX_T = 4;

void main() {
  const uint N4 = p.N / 4, K4 = p.K / 4;
  const uint k40 = gl_WorkGroupID.y * (TK / 4);  // first vec4 of k
  const uint c0 = gl_GlobalInvocationID.x * TN4;
  if (k40 >= K4 || c0 >= N4) return;

  vec4 acc[MAX_K4 * 4][MAX_T];
  for (uint i = 0; i < TK; ++i)
    for (uint j = 0; j < TN4; ++j) acc[i][j] = vec4(0.0);
  uint k4s[MAX_K4];
  uint cs[MAX_T];
  for (uint i = 0; i < TK / 4; ++i) k4s[i] = min(k40 + i, K4 - 1);
  for (uint j = 0; j < TN4; ++j) cs[j] = min(c0 + j, N4 - 1);

  // Four rows per loop iteration: llvmpipe silently ends all loops of an invocation after 65535
  // iterations in total, and M = B*T can exceed that.
  for (uint m0 = 0; m0 < p.M; m0 += 4) {
    [[unroll]] for (uint u = 0; u < 4; ++u) {
      const uint m = m0 + u;
      if (m < p.M) {
        vec4 b[MAX_T];
        for (uint j = 0; j < TN4; ++j) b[j] = A_LOAD4(dout4[(m * p.ld_dout + p.n_offset) / 4 + cs[j]]);
        for (uint i4 = 0; i4 < TK / 4; ++i4) {
          const vec4 a = B_LOAD4(inp4[m * K4 + k4s[i4]]);
          for (uint j = 0; j < TN4; ++j) {
            acc[i4 * 4 + 0][j] = fma(vec4(a.x), b[j], acc[i4 * 4 + 0][j]);
            acc[i4 * 4 + 1][j] = fma(vec4(a.y), b[j], acc[i4 * 4 + 1][j]);
            acc[i4 * 4 + 2][j] = fma(vec4(a.z), b[j], acc[i4 * 4 + 2][j]);
            acc[i4 * 4 + 3][j] = fma(vec4(a.w), b[j], acc[i4 * 4 + 3][j]);
          }
        }
      }
    }
  }

  for (uint i = 0; i < TK; ++i) {
    const uint k = k40 * 4 + i;
    if (k >= p.K) break;
    for (uint j = 0; j < TN4; ++j) {
      const uint c = c0 + j;
      if (c >= N4) break;
      const uint o = k * N4 + c;
      dw4[o] = p.accumulate != 0 ? dw4[o] + acc[i][j] : acc[i][j];
    }
  }
}
