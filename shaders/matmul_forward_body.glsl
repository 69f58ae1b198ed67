// Included by matmul_forward*.comp, which choose the operands' storage (operand_storage.glsl):
// A = inp, B = w, C = out.
#include "operand_storage.glsl"
#include "push_constants.h"

// out[M,N] = inp[M,K] * W + bias, each invocation computing a TM x TN register tile.
//
// No shared memory and no barriers: CPU implementations (lavapipe) run a workgroup's invocations
// as coroutines, where barriers dominate. The TM rows of a tile depend only on the workgroup id,
// so every load of `inp` is uniform across the workgroup (one scalar load, broadcast, on SIMD
// CPUs; a cached broadcast on GPUs); the TN columns are interleaved with stride WX so that
// neighbouring invocations read neighbouring W elements (coalesced on GPUs).
// The reduction over K runs in one fixed order, so results are deterministic. The output may be
// a piece's columns of a wider matrix (MatmulParams.ldo, n_offset).
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 3) const uint TM = 8;  // ids 0-2 are the workgroup size
layout(constant_id = 4) const uint TN = 2;

layout(std430, binding = 0) readonly buffer Inp { A_T inp[]; };
layout(std430, binding = 1) readonly buffer Wgt { B_T w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { C_T outp[]; };
layout(push_constant) uniform Push { MatmulParams p; };

const uint MAX_T = 16;

void main() {
  const uint WX = gl_WorkGroupSize.x;
  const uint m0 = gl_WorkGroupID.y * TM;
  const uint n0 = gl_WorkGroupID.x * WX * TN + gl_LocalInvocationID.x;
  if (m0 >= p.M || n0 >= p.N) return;

  float acc[MAX_T][MAX_T];
  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

  // Clamp indices so edge tiles load valid memory; their extra results are never stored.
  uint rows[MAX_T];
  uint cols[MAX_T];
  for (uint i = 0; i < TM; ++i) rows[i] = min(m0 + i, p.M - 1) * p.K;
  for (uint j = 0; j < TN; ++j) cols[j] = min(n0 + j * WX, p.N - 1);

  if (p.w_layout == 0) {
    for (uint k = 0; k < p.K; ++k) {
      float b[MAX_T];
      for (uint j = 0; j < TN; ++j) b[j] = B_LOAD(w[k * p.N + cols[j]]);
      for (uint i = 0; i < TM; ++i) {
        const float a = A_LOAD(inp[rows[i] + k]);
        for (uint j = 0; j < TN; ++j) acc[i][j] = fma(a, b[j], acc[i][j]);
      }
    }
  } else {
    for (uint k = 0; k < p.K; ++k) {
      float b[MAX_T];
      for (uint j = 0; j < TN; ++j) b[j] = B_LOAD(w[cols[j] * p.K + k]);
      for (uint i = 0; i < TM; ++i) {
        const float a = A_LOAD(inp[rows[i] + k]);
        for (uint j = 0; j < TN; ++j) acc[i][j] = fma(a, b[j], acc[i][j]);
      }
    }
  }

  for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + i;
    if (m >= p.M) break;
    for (uint j = 0; j < TN; ++j) {
      const uint n = n0 + j * WX;
      if (n >= p.N) break;
      float v = acc[i][j];
      if (p.has_bias != 0) v += bias[p.n_offset + n];
      outp[m * p.ldo + p.n_offset + n] = C_STORE(v);
    }
  }
}
