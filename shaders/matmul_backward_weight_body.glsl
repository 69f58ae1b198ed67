// Included by matmul_backward_weight*.comp, which choose the operands' storage (operand_storage.glsl):
// A = dout (f32), B = inp (an activation: f32, f16 or bf16), dW f32.
#include "operand_storage.glsl"
#include "matmul_backward_params.h"

// dW (+)= inp^T * dout: dW(k, n) = sum over m of inp[m,k] * dout[m,n], stored in W's layout
// ([K,N] for w_layout 0, [N,K] for 1). Each invocation owns a TK x TN register tile and walks m
// from 0 to M-1 itself: a fixed reduction order with no atomics and no split-M partial sums, so
// the gradient is bit-identical run to run (the checkpointing guarantee depends on it).
//
// The TK rows of the tile depend only on the workgroup id, so loads of `inp` are uniform across
// the workgroup; the TN columns are interleaved with stride WX so neighbouring invocations read
// neighbouring elements of each dout row (see matmul_forward.comp). No shared memory, no barriers.
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 3) const uint TK = 8;  // ids 0-2 are the workgroup size
layout(constant_id = 4) const uint TN = 2;

layout(std430, binding = 0) readonly buffer Dout { A_T dout[]; };
layout(std430, binding = 1) readonly buffer Inp { B_T inp[]; };
layout(std430, binding = 2) buffer Dw { float dw[]; };
layout(push_constant) uniform Push { MatmulBackwardParams p; };

const uint MAX_T = 16;

void main() {
  const uint WX = gl_WorkGroupSize.x;
  const uint k0 = gl_WorkGroupID.y * TK;
  const uint n0 = gl_WorkGroupID.x * WX * TN + gl_LocalInvocationID.x;
  if (k0 >= p.K || n0 >= p.N) return;

  float acc[MAX_T][MAX_T];
  for (uint i = 0; i < TK; ++i)
    for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

  // Clamped indices keep edge tiles in bounds; their extra results are never stored.
  uint ks[MAX_T];
  uint ns[MAX_T];
  for (uint i = 0; i < TK; ++i) ks[i] = min(k0 + i, p.K - 1);
  for (uint j = 0; j < TN; ++j) ns[j] = min(n0 + j * WX, p.N - 1);

  // Four rows per loop iteration: llvmpipe silently ends all loops of an invocation after 65535
  // iterations in total (LP_MAX_TGSI_LOOP_ITERATIONS), and M = B*T can exceed that.
  for (uint m0 = 0; m0 < p.M; m0 += 4) {
    [[unroll]] for (uint u = 0; u < 4; ++u) {
      const uint m = m0 + u;
      if (m < p.M) {
        float b[MAX_T];
        for (uint j = 0; j < TN; ++j) b[j] = A_LOAD(dout[m * p.ld_dout + p.n_offset + ns[j]]);
        for (uint i = 0; i < TK; ++i) {
          const float a = B_LOAD(inp[m * p.K + ks[i]]);
          for (uint j = 0; j < TN; ++j) acc[i][j] = fma(a, b[j], acc[i][j]);
        }
      }
    }
  }

  for (uint i = 0; i < TK; ++i) {
    const uint k = k0 + i;
    if (k >= p.K) break;
    for (uint j = 0; j < TN; ++j) {
      const uint n = n0 + j * WX;
      if (n >= p.N) break;
      const uint o = p.w_layout == 0 ? k * p.N + n : n * p.K + k;
      dw[o] = p.accumulate != 0 ? dw[o] + acc[i][j] : acc[i][j];
    }
  }
}
