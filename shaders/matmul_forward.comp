#version 450
#extension GL_GOOGLE_include_directive : require
#include "push_constants.h"

// out[M,N] = inp[M,K] * W + bias, each invocation computing a TM x TN register tile.
// No shared memory and no barriers: on CPU implementations (lavapipe runs workgroups as
// coroutines) barriers dominate, and on GPUs the tile still gives TM*TN FMAs per 2 loads.
// The reduction over K runs in one fixed order, so results are deterministic.
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 3) const uint TM = 4;  // ids 0-2 are the workgroup size
layout(constant_id = 4) const uint TN = 4;

layout(std430, binding = 0) readonly buffer Inp { float inp[]; };
layout(std430, binding = 1) readonly buffer Wgt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { float outp[]; };
layout(push_constant) uniform Push { MatmulParams p; };

const uint MAX_T = 8;

void main() {
  uint n0 = gl_GlobalInvocationID.x * TN;
  uint m0 = gl_GlobalInvocationID.y * TM;
  if (m0 >= p.M || n0 >= p.N) return;

  float acc[MAX_T][MAX_T];
  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

  // Clamp indices so edge tiles load valid memory; their extra results are never stored.
  uint rows[MAX_T];
  uint cols[MAX_T];
  for (uint i = 0; i < TM; ++i) rows[i] = min(m0 + i, p.M - 1) * p.K;
  for (uint j = 0; j < TN; ++j) cols[j] = min(n0 + j, p.N - 1);

  for (uint k = 0; k < p.K; ++k) {
    float a[MAX_T];
    float b[MAX_T];
    for (uint i = 0; i < TM; ++i) a[i] = inp[rows[i] + k];
    if (p.w_layout == 0) {
      for (uint j = 0; j < TN; ++j) b[j] = w[k * p.N + cols[j]];
    } else {
      for (uint j = 0; j < TN; ++j) b[j] = w[cols[j] * p.K + k];
    }
    for (uint i = 0; i < TM; ++i)
      for (uint j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
  }

  for (uint i = 0; i < TM; ++i) {
    uint m = m0 + i;
    if (m >= p.M) break;
    for (uint j = 0; j < TN; ++j) {
      uint n = n0 + j;
      if (n >= p.N) break;
      float v = acc[i][j];
      if (p.has_bias != 0) v += bias[n];
      outp[m * p.N + n] = v;
    }
  }
}
