// Included by matmul_dot_texels*.comp, which choose the storage of X and Y
// (texel_operands.glsl: A_FETCH, B_FETCH) and of the result C (operand_storage.glsl's C_*).
#include "matmul_texels_params.h"
#include "operand_storage.glsl"
#include "texel_operands.glsl"

// C[I,J] (+)= X[I,R] * Y[J,R]^T as dot products along r, for CPU drivers (DeviceQuirks::
// texel_fetch_beats_storage_loads): the matmuls whose two operands are both contiguous along the
// reduction, i.e. the forward of an [out, in] weight (the tied LM head) and the input gradient of
// an [in, out] weight. Both are read through vec4 texel views (R, x_si and y_stride multiples of
// 4; x_offset too), four r per fetch; each output is one fma chain in ascending r, the order of the scalar
// kernels, so every variant gives the same bits. An invocation owns TI rows x TJ columns, its
// columns interleaved with stride WX so neighbouring invocations store neighbouring elements.
// X_LANES (shared_x.glsl): X's texels, the same for every lane, are fetched once per subgroup.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TI = 4;  // ids 0-2 are the workgroup size
layout(constant_id = 4) const uint TJ = 4;
layout(constant_id = 5) const uint X_LANES = 1;

layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) buffer C { C_T c[]; };
layout(push_constant) uniform Push { MatmulTexelsParams p; };

const uint MAX_T = 16;
#include "shared_x.glsl"

void main() {
  const uint WX = gl_WorkGroupSize.x;
  const uint i0 = gl_WorkGroupID.y * TI;
  const uint j0 = gl_WorkGroupID.x * WX * TJ + gl_LocalInvocationID.x;
  // Lanes past J stay to fetch X for their subgroup; their columns are clamped, never stored.
  if (i0 >= p.I || (!SHARED_X && j0 >= p.J)) return;

  // Clamped indices keep edge tiles in bounds; their extra results are never stored.
  uint rows[MAX_T];
  uint cols[MAX_T];
  [[unroll]] for (uint i = 0; i < TI; ++i) rows[i] = min(i0 + i, p.I - 1);
  [[unroll]] for (uint j = 0; j < TJ; ++j) cols[j] = min(j0 + j * WX, p.J - 1);
  uint xrow[MAX_T];
  uint yrow[MAX_T];
  [[unroll]] for (uint i = 0; i < TI; ++i) xrow[i] = (p.x_offset + rows[i] * p.x_si) / 4;
  [[unroll]] for (uint j = 0; j < TJ; ++j) yrow[j] = cols[j] * p.y_stride / 4;
  uint own[MAX_SHARED];  // this lane's rows to fetch for the subgroup (SHARED_X)
  [[unroll]] for (uint k = 0; k < TI / X_LANES; ++k)
    own[k] = (p.x_offset + min(i0 + k * X_LANES + gl_SubgroupInvocationID, p.I - 1) * p.x_si) / 4;
  float acc[MAX_T][MAX_T];
  [[unroll]] for (uint i = 0; i < TI; ++i)
    [[unroll]] for (uint j = 0; j < TJ; ++j)
      acc[i][j] = p.accumulate == 2 ? C_LOAD(c[p.c_offset + rows[i] * p.ldc + cols[j]]) : 0.0;

  // R/4 iterations: llvmpipe stops an invocation's loops after 65535 iterations in total.
  for (uint r4 = 0; r4 < p.R / 4; ++r4) {
    vec4 a[MAX_T];
    vec4 b[MAX_T];
    if (SHARED_X) {
      vec4 fetched[MAX_SHARED];
      [[unroll]] for (uint k = 0; k < TI / X_LANES; ++k) fetched[k] = A_FETCH(int(own[k] + r4));
      [[unroll]] for (uint i = 0; i < TI; ++i) a[i] = SHARED_TEXEL(fetched, i);
    } else {
      [[unroll]] for (uint i = 0; i < TI; ++i) a[i] = A_FETCH(int(xrow[i] + r4));
    }
    [[unroll]] for (uint j = 0; j < TJ; ++j) b[j] = B_FETCH(int(yrow[j] + r4));
    [[unroll]] for (uint i = 0; i < TI; ++i)
      [[unroll]] for (uint j = 0; j < TJ; ++j) {
        float s = acc[i][j];
        s = fma(a[i].x, b[j].x, s);
        s = fma(a[i].y, b[j].y, s);
        s = fma(a[i].z, b[j].z, s);
        acc[i][j] = fma(a[i].w, b[j].w, s);
      }
  }

  // Each column's bias read once for all the tile's rows (see matmul_outer_texels_body.glsl).
  float bias_col[MAX_T];
  if (p.has_bias != 0)
    [[unroll]] for (uint j = 0; j < TJ; ++j) bias_col[j] = bias[p.c_offset + cols[j]];
  [[unroll]] for (uint i = 0; i < TI; ++i) {
    const uint row = i0 + i;
    if (row >= p.I) break;
    [[unroll]] for (uint j = 0; j < TJ; ++j) {
      const uint col = j0 + j * WX;
      if (col >= p.J) break;
      float v = acc[i][j];
      if (p.has_bias != 0) v += bias_col[j];
      const uint o = p.c_offset + row * p.ldc + col;
      c[o] = C_STORE(p.accumulate == 1 ? C_LOAD(c[o]) + v : v);
    }
  }
}
