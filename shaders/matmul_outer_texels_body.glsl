// Included by matmul_outer_texels*.comp, which choose the storage of X and Y
// (texel_operands.glsl: A_FETCH, B_FETCH) and of the result C (operand_storage.glsl's C_*).
#include "matmul_texels_params.h"
#include "operand_storage.glsl"
#include "texel_operands.glsl"

// C[I,J] (+)= X(I,R) * Y[R,J] as a sum of outer products, for CPU drivers (DeviceQuirks::
// texel_fetch_beats_storage_loads). X and Y are read through texel views: on llvmpipe a texel
// fetch is a branch-free gather while a storage-buffer load is a per-lane loop, and each
// invocation's TI x 4*TJ4 register tile gets 4*TI*TJ4 FMAs per fetched Y texel. The reduction
// over r is one fma chain in ascending r per output, the order of matmul_forward.comp and
// matmul_backward_*.comp, so every variant gives the same bits.
//
// X_MODE 0: X is r-contiguous (x_sr = 1), a vec4 view, read four r at a time (R, x_si and
//           x_offset multiples of 4).
// X_MODE 1: X is i-contiguous (x_si = 1), a vec4 view, read four rows at a time (TI, I, x_sr
//           and x_offset multiples of 4).
// X_MODE 2: X has any strides, an R32F view, read one element at a time.
// X_MODE 3: as 0 with any x_si, x_offset and R (a row of the tied head's dlogits, V = 50257
//           floats apart): each row's four r are two vec4 texels shifted by (its start % 4).
// X_MODE 4: as 1 with any x_sr and x_offset: TI/4 + 1 vec4 texels per r, shifted alike.
// The shifted modes read whole vec4 texels of a view that may end mid-row, so their fetches
// are clamped to the view (the clamped texel only ever fills unused lanes of the shift).
// Y is a vec4 view with y_stride and J multiples of 4; C is stored as vec4 (ldc and c_offset
// multiples of 4).
//
// X_LANES (shared_x.glsl): in every mode but 2 the X texels of a tile, the same for every lane
// of a subgroup, are fetched once across the lanes and passed round by subgroupShuffle.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TI = 8;   // rows of the tile (ids 0-2 are the workgroup size)
layout(constant_id = 4) const uint TJ4 = 2;  // vec4 columns of the tile
layout(constant_id = 5) const uint X_MODE = 0;
layout(constant_id = 6) const uint X_LANES = 1;

// Read (has_bias 1: the forward's bias) or written (has_bias 2 and 3: the bias gradient).
layout(std430, binding = 2) buffer Bias { vec4 bias4[]; };
layout(std430, binding = 3) buffer C { C_T4 c4[]; };
// The fused residual (p.residual 1), vec4s in C's layout; a stand-in view otherwise.
layout(binding = 4) uniform textureBuffer Residual;
layout(push_constant) uniform Push { MatmulTexelsParams p; };

const uint MAX_T = 16;
#include "shared_x.glsl"

// Elements s..s+3 of the eight floats lo, hi (s < 4): a vec4 that starts s floats into lo.
vec4 shifted(vec4 lo, vec4 hi, uint s) {
  if (s == 0) return lo;
  if (s == 1) return vec4(lo.yzw, hi.x);
  if (s == 2) return vec4(lo.zw, hi.xy);
  return vec4(lo.w, hi.xyz);
}

// X(i0 + i, r) for the tile's rows in modes 1, 2 and 4.
void x_column(uint r, uint i0, uint rows[MAX_T], int last, out float a[MAX_T]) {
  if (X_MODE == 1) {
    [[unroll]] for (uint i = 0; i < TI; i += 4) {
      const vec4 v = A_FETCH(int((p.x_offset + r * p.x_sr + min(i0 + i, p.I - 4)) / 4));
      a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
    }
  } else if (X_MODE == 4) {
    // Rows past I read whatever follows (clamped to the view); they are never stored.
    const uint base = p.x_offset + r * p.x_sr + i0;
    const int t = int(base / 4);
    vec4 lo = A_FETCH(min(t, last));
    [[unroll]] for (uint i = 0; i < TI; i += 4) {
      const vec4 hi = A_FETCH(min(t + int(i / 4) + 1, last));
      const vec4 v = shifted(lo, hi, base % 4);
      a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
      lo = hi;
    }
  } else {
    [[unroll]] for (uint i = 0; i < TI; ++i) a[i] = A_FETCH(int(p.x_offset + rows[i] * p.x_si + r * p.x_sr)).x;
  }
}

// has_bias 2 and 3: the workgroups past the last row of tiles sum Y's columns instead,
// bias[j] (+)= sum_r Y[r, j], each in one chain of adds in ascending r from 0: the bits of
// matmul_backward_bias.comp, which sums the same dout column in the same order (the
// weight gradient's Y is dout). No X is read and no subgroup operation runs there.
void column_sums(uint J4) {
  const uint j0 = gl_GlobalInvocationID.x * TJ4;
  if (j0 >= J4) return;
  uint cols[MAX_T];
  [[unroll]] for (uint j = 0; j < TJ4; ++j) cols[j] = min(j0 + j, J4 - 1) * 4;
  vec4 acc[MAX_T];
  [[unroll]] for (uint j = 0; j < TJ4; ++j) acc[j] = vec4(0.0);
  // Four r per iteration (llvmpipe's 65535-iteration limit), added one at a time in order.
  const uint R4 = p.R / 4 * 4;
  for (uint r = 0; r < R4; r += 4) {
    [[unroll]] for (uint u = 0; u < 4; ++u)
      [[unroll]] for (uint j = 0; j < TJ4; ++j)
        acc[j] += B_FETCH(int(((r + u) * p.y_stride + cols[j]) / 4));
  }
  for (uint r = R4; r < p.R; ++r)
    [[unroll]] for (uint j = 0; j < TJ4; ++j) acc[j] += B_FETCH(int((r * p.y_stride + cols[j]) / 4));
  [[unroll]] for (uint j = 0; j < TJ4; ++j) {
    const uint col4 = j0 + j;
    if (col4 >= J4) break;
    bias4[col4] = p.has_bias == 3 ? bias4[col4] + acc[j] : acc[j];
  }
}

void main() {
  const uint J4 = p.J / 4;
  if (p.has_bias >= 2 && gl_WorkGroupID.y == (p.I + TI - 1) / TI) {
    column_sums(J4);
    return;
  }
  const uint i0 = gl_WorkGroupID.y * TI;
  const uint j0 = gl_GlobalInvocationID.x * TJ4;
  // Lanes past J stay to fetch X for their subgroup; their columns are clamped, never stored.
  if (i0 >= p.I || (!SHARED_X && j0 >= J4)) return;

  // Clamped indices keep edge tiles in bounds; their extra results are never stored.
  uint rows[MAX_T];
  uint cols[MAX_T];
  [[unroll]] for (uint i = 0; i < TI; ++i) rows[i] = min(i0 + i, p.I - 1);
  [[unroll]] for (uint j = 0; j < TJ4; ++j) cols[j] = min(j0 + j, J4 - 1) * 4;
  vec4 acc[MAX_T][MAX_T];
  [[unroll]] for (uint i = 0; i < TI; ++i)
    [[unroll]] for (uint j = 0; j < TJ4; ++j)
      acc[i][j] = p.accumulate == 2 ? C_LOAD4(c4[(p.c_offset + rows[i] * p.ldc + cols[j]) / 4]) : vec4(0.0);

  const int last = textureSize(X) - 1;  // the view's last texel (shifted modes)
  if (X_MODE == 0 || X_MODE == 3) {
    // Each row's first texel and shift (mode 3; mode 0 has shift 0).
    uint start[MAX_T];
    uint shift[MAX_T];
    [[unroll]] for (uint i = 0; i < TI; ++i) {
      start[i] = (p.x_offset + rows[i] * p.x_si) / 4;
      shift[i] = (p.x_offset + rows[i] * p.x_si) % 4;
    }
    // This lane's rows to fetch for the subgroup (SHARED_X): first texel and shift.
    uint own[MAX_SHARED];
    uint own_shift[MAX_SHARED];
    [[unroll]] for (uint k = 0; k < TI / X_LANES; ++k) {
      const uint first = p.x_offset + min(i0 + k * X_LANES + gl_SubgroupInvocationID, p.I - 1) * p.x_si;
      own[k] = first / 4;
      own_shift[k] = first % 4;
    }
    // R/4 iterations: llvmpipe stops an invocation's loops after 65535 iterations in total.
    // Whole groups of four r first, each accumulator taking its four fmas in a row: llvmpipe
    // stores a value carried by a loop through the loop's mask, once per group instead of once
    // per fma (the order of the fmas into each accumulator is unchanged).
    const uint R4 = p.R / 4 * 4;
    for (uint r = 0; r < R4; r += 4) {
      vec4 a[MAX_T];
      if (SHARED_X) {
        vec4 fetched[MAX_SHARED];
        [[unroll]] for (uint k = 0; k < TI / X_LANES; ++k) {
          const int t = int(own[k] + r / 4);
          fetched[k] = A_FETCH(t);
          if (X_MODE == 3) fetched[k] = shifted(fetched[k], A_FETCH(min(t + 1, last)), own_shift[k]);
        }
        [[unroll]] for (uint i = 0; i < TI; ++i) a[i] = SHARED_TEXEL(fetched, i);
      } else {
        [[unroll]] for (uint i = 0; i < TI; ++i) {
          const int t = int(start[i] + r / 4);
          a[i] = A_FETCH(t);
          if (X_MODE == 3) a[i] = shifted(a[i], A_FETCH(min(t + 1, last)), shift[i]);
        }
      }
      vec4 b[4][MAX_T];
      [[unroll]] for (uint u = 0; u < 4; ++u)
        [[unroll]] for (uint j = 0; j < TJ4; ++j) b[u][j] = B_FETCH(int(((r + u) * p.y_stride + cols[j]) / 4));
      [[unroll]] for (uint i = 0; i < TI; ++i)
        [[unroll]] for (uint j = 0; j < TJ4; ++j) {
          vec4 s = fma(vec4(a[i].x), b[0][j], acc[i][j]);
          s = fma(vec4(a[i].y), b[1][j], s);
          s = fma(vec4(a[i].z), b[2][j], s);
          acc[i][j] = fma(vec4(a[i].w), b[3][j], s);
        }
    }
    // Mode 3's last R % 4 r.
    for (uint r = R4; r < p.R; ++r) {
      [[unroll]] for (uint i = 0; i < TI; ++i) {
        const int t = int(start[i] + R4 / 4);
        const vec4 v = shifted(A_FETCH(t), A_FETCH(min(t + 1, last)), shift[i]);
        const float x = r - R4 == 0 ? v.x : r - R4 == 1 ? v.y : v.z;
        [[unroll]] for (uint j = 0; j < TJ4; ++j)
          acc[i][j] = fma(vec4(x), B_FETCH(int((r * p.y_stride + cols[j]) / 4)), acc[i][j]);
      }
    }
  } else {
    // Whole groups of four r (the loop limit, and the loop-carried stores, as above), then the
    // last R % 4 one at a time.
    const uint R4 = p.R / 4 * 4;
    for (uint r = 0; r < R4; r += 4) {
      float a[4][MAX_T];
      vec4 b[4][MAX_T];
      // SHARED_X: the texels of the four r (mode 1: TI/4 each; mode 4: TI/4 + 1, shifted after
      // the shuffle), spread over the lanes in (r, texel) order.
      vec4 fetched[MAX_SHARED];
      if (SHARED_X && X_MODE == 1) {
        [[unroll]] for (uint k = 0; k < TI / X_LANES; ++k) {
          const uint t = k * X_LANES + gl_SubgroupInvocationID;
          const uint row0 = min(i0 + t % (TI / 4) * 4, p.I - 4);
          fetched[k] = A_FETCH(int((p.x_offset + (r + t / (TI / 4)) * p.x_sr + row0) / 4));
        }
      } else if (SHARED_X && X_MODE == 4) {
        [[unroll]] for (uint k = 0; k < (TI + 4 + X_LANES - 1) / X_LANES; ++k) {
          const uint t = k * X_LANES + gl_SubgroupInvocationID;
          const uint rt = min(r + t / (TI / 4 + 1), p.R - 1);  // slots past the 4 r: unused
          const int first = int((p.x_offset + rt * p.x_sr + i0) / 4);
          fetched[k] = A_FETCH(min(first + int(t % (TI / 4 + 1)), last));
        }
      }
      [[unroll]] for (uint u = 0; u < 4; ++u) {
        if (SHARED_X && X_MODE == 1) {
          [[unroll]] for (uint i = 0; i < TI; i += 4) {
            const vec4 v = SHARED_TEXEL(fetched, u * (TI / 4) + i / 4);
            a[u][i] = v.x; a[u][i + 1] = v.y; a[u][i + 2] = v.z; a[u][i + 3] = v.w;
          }
        } else if (SHARED_X && X_MODE == 4) {
          const uint shift4 = (p.x_offset + (r + u) * p.x_sr + i0) % 4;
          vec4 lo = SHARED_TEXEL(fetched, u * (TI / 4 + 1));
          [[unroll]] for (uint i = 0; i < TI; i += 4) {
            const vec4 hi = SHARED_TEXEL(fetched, u * (TI / 4 + 1) + i / 4 + 1);
            const vec4 v = shifted(lo, hi, shift4);
            a[u][i] = v.x; a[u][i + 1] = v.y; a[u][i + 2] = v.z; a[u][i + 3] = v.w;
            lo = hi;
          }
        } else {
          x_column(r + u, i0, rows, last, a[u]);
        }
        [[unroll]] for (uint j = 0; j < TJ4; ++j) b[u][j] = B_FETCH(int(((r + u) * p.y_stride + cols[j]) / 4));
      }
      [[unroll]] for (uint i = 0; i < TI; ++i)
        [[unroll]] for (uint j = 0; j < TJ4; ++j) {
          vec4 s = fma(vec4(a[0][i]), b[0][j], acc[i][j]);
          s = fma(vec4(a[1][i]), b[1][j], s);
          s = fma(vec4(a[2][i]), b[2][j], s);
          acc[i][j] = fma(vec4(a[3][i]), b[3][j], s);
        }
    }
    for (uint r = R4; r < p.R; ++r) {
      float a[MAX_T];
      x_column(r, i0, rows, last, a);
      vec4 b[MAX_T];
      [[unroll]] for (uint j = 0; j < TJ4; ++j) b[j] = B_FETCH(int((r * p.y_stride + cols[j]) / 4));
      [[unroll]] for (uint i = 0; i < TI; ++i)
        [[unroll]] for (uint j = 0; j < TJ4; ++j) acc[i][j] = fma(vec4(a[i]), b[j], acc[i][j]);
    }
  }

  // The bias of each column, read once for all the tile's rows: on llvmpipe each storage-buffer
  // load is a loop over the lanes, and one per row would not be merged across the stores to C.
  vec4 bias_col[MAX_T];
  if (p.has_bias == 1)
    [[unroll]] for (uint j = 0; j < TJ4; ++j) bias_col[j] = bias4[p.c_offset / 4 + min(j0 + j, J4 - 1)];
  [[unroll]] for (uint i = 0; i < TI; ++i) {
    const uint row = i0 + i;
    if (row >= p.I) break;
    [[unroll]] for (uint j = 0; j < TJ4; ++j) {
      const uint col4 = j0 + j;
      if (col4 >= J4) break;
      vec4 v = acc[i][j];
      if (p.has_bias == 1) v += bias_col[j];
      const uint o = (p.c_offset + row * p.ldc) / 4 + col4;
      // residual_forward's y = a + 1.0 * b with b this matmul's output: the same sum, unrounded
      // in between only where C is f32 (the host fuses nothing else).
      if (p.residual != 0) v = texelFetch(Residual, int(o)) + v;
      c4[o] = C_STORE4(p.accumulate == 1 ? C_LOAD4(c4[o]) + v : v);
    }
  }
}
