// Included by matmul_backward_input_vec4*.comp, which choose the operands' storage
// (operand_storage.glsl): A = dout4, B = w4, C = dinp.
#include "operand_storage.glsl"
#include "matmul_backward_params.h"

// dinp[M,K] (+)= dout[M,N] * W^T for W in (in, out) layout [K,N] with N % 4 == 0: the variant
// for CPU implementations. Same tiles as matmul_backward_input.comp, but the reduction over n
// loads four floats at a time from both dout (uniform rows) and W (each invocation's own rows
// of W are contiguous in n). llvmpipe turns every buffer load into a per-lane scalar loop, so a
// vec4 load costs about what a float load does: four times fewer loads per FMA. The FMAs run in
// the same n order as the scalar kernel, so both variants give the same bits. ld_dout and
// n_offset (MatmulBackwardParams) must be multiples of 4 too.
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 3) const uint TM = 8;  // ids 0-2 are the workgroup size
layout(constant_id = 4) const uint TK = 2;

layout(std430, binding = 0) readonly buffer Dout { A_T4 dout4[]; };
layout(std430, binding = 1) readonly buffer Wgt { B_T4 w4[]; };
layout(std430, binding = 2) buffer Dinp { C_T dinp[]; };
layout(push_constant) uniform Push { MatmulBackwardParams p; };

const uint MAX_T = 16;

void main() {
  const uint WX = gl_WorkGroupSize.x;
  const uint m0 = gl_WorkGroupID.y * TM;
  const uint k0 = gl_WorkGroupID.x * WX * TK + gl_LocalInvocationID.x;
  if (m0 >= p.M || k0 >= p.K) return;
  const uint N4 = p.N / 4;

  uint rows[MAX_T];
  uint cols[MAX_T];
  for (uint i = 0; i < TM; ++i) rows[i] = (min(m0 + i, p.M - 1) * p.ld_dout + p.n_offset) / 4;
  for (uint j = 0; j < TK; ++j) cols[j] = min(k0 + j * WX, p.K - 1) * N4;

  // accumulate 2: continue the sum already in dinp (see matmul_backward_params.h).
  float acc[MAX_T][MAX_T];
  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TK; ++j)
      acc[i][j] =
          p.accumulate == 2
              ? C_LOAD(dinp[min(m0 + i, p.M - 1) * p.K + min(k0 + j * WX, p.K - 1)])
              : 0.0;

  for (uint n4 = 0; n4 < N4; ++n4) {
    vec4 b[MAX_T];
    for (uint j = 0; j < TK; ++j) b[j] = B_LOAD4(w4[cols[j] + n4]);
    for (uint i = 0; i < TM; ++i) {
      const vec4 a = A_LOAD4(dout4[rows[i] + n4]);
      for (uint j = 0; j < TK; ++j) {
        float s = acc[i][j];
        s = fma(a.x, b[j].x, s);
        s = fma(a.y, b[j].y, s);
        s = fma(a.z, b[j].z, s);
        acc[i][j] = fma(a.w, b[j].w, s);
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
