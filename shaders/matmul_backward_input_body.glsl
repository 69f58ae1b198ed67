// Included by matmul_backward_input*.comp, which choose the operands' storage
// (operand_storage.glsl): A = dout, B = w, C = dinp.
#include "operand_storage.glsl"
#include "matmul_backward_params.h"

// dinp[M,K] (+)= dout[M,N] * W^T, each invocation computing a TM x TK register tile of dinp.
//
// Same design as matmul_forward.comp: no shared memory and no barriers (CPU implementations run
// a workgroup's invocations as coroutines, where barriers dominate). The TM rows of a tile depend
// only on the workgroup id, so every load of `dout` is uniform across the workgroup (one
// broadcast load on SIMD CPUs); the TK columns are interleaved with stride WX so neighbouring
// invocations own neighbouring columns of dinp. The reduction over N runs in one fixed order, so
// two runs are bit-identical.
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 3) const uint TM = 8;  // ids 0-2 are the workgroup size
layout(constant_id = 4) const uint TK = 2;

layout(std430, binding = 0) readonly buffer Dout { A_T dout[]; };
layout(std430, binding = 1) readonly buffer Wgt { B_T w[]; };
layout(std430, binding = 2) buffer Dinp { C_T dinp[]; };
layout(push_constant) uniform Push { MatmulBackwardParams p; };

const uint MAX_T = 16;

void main() {
  const uint WX = gl_WorkGroupSize.x;
  const uint m0 = gl_WorkGroupID.y * TM;
  const uint k0 = gl_WorkGroupID.x * WX * TK + gl_LocalInvocationID.x;
  if (m0 >= p.M || k0 >= p.K) return;

  // Clamped indices keep edge tiles in bounds; their extra results are never stored.
  uint rows[MAX_T];
  uint cols[MAX_T];
  for (uint i = 0; i < TM; ++i) rows[i] = min(m0 + i, p.M - 1) * p.ld_dout + p.n_offset;
  for (uint j = 0; j < TK; ++j) cols[j] = min(k0 + j * WX, p.K - 1);

  // accumulate 2: a later piece of W's rows continues the sum the earlier pieces stored.
  float acc[MAX_T][MAX_T];
  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TK; ++j)
      acc[i][j] = p.accumulate == 2 ? C_LOAD(dinp[min(m0 + i, p.M - 1) * p.K + cols[j]]) : 0.0;

  if (p.w_layout == 0) {  // W(k, n) = w[k * N + n]
    for (uint n = 0; n < p.N; ++n) {
      float b[MAX_T];
      for (uint j = 0; j < TK; ++j) b[j] = B_LOAD(w[cols[j] * p.N + n]);
      for (uint i = 0; i < TM; ++i) {
        const float a = A_LOAD(dout[rows[i] + n]);
        for (uint j = 0; j < TK; ++j) acc[i][j] = fma(a, b[j], acc[i][j]);
      }
    }
  } else {  // W(k, n) = w[n * K + k]
    for (uint n = 0; n < p.N; ++n) {
      float b[MAX_T];
      for (uint j = 0; j < TK; ++j) b[j] = B_LOAD(w[n * p.K + cols[j]]);
      for (uint i = 0; i < TM; ++i) {
        const float a = A_LOAD(dout[rows[i] + n]);
        for (uint j = 0; j < TK; ++j) acc[i][j] = fma(a, b[j], acc[i][j]);
      }
    }
  }

  for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + i;
    if (m >= p.M) break;
    for (uint j = 0; j < TK; ++j) {
      const uint k = k0 + j * WX;
      if (k >= p.K) break;
      const uint o = m * p.K + k;
      dinp[o] = C_STORE(p.accumulate == 1 ? C_LOAD(dinp[o]) + acc[i][j] : acc[i][j]);
    }
  }
}
