// Included by matmul_blocks_backward_input*.comp, which say how dout is read: a storage buffer
// (GPUs), or a texel view where the wrapper defines MATMUL_BLOCKS_TEXELS (CPU drivers,
// DeviceQuirks::texel_fetch_beats_storage_loads): RGBA32F with DOUT_VEC4 = 1 (dout's rows and
// offset multiples of 4), else R32F.
#extension GL_EXT_control_flow_attributes : require
#include "gguf_block_ids.h"
#include "matmul_blocks_params.h"

// dinp[M,K] (+)= dout[M,N] * W with W [N,K] (out, in) in a ggml block type, decoded where it is
// read: each output is the chain of matmul_backward_input.comp and matmul_outer_texels.comp on
// the decoded f32 W, fma(dout[m,n], W[n,k], acc) for n = 0, 1, .., N-1 from acc = 0 (from dinp
// with accumulate 2), stored as acc or, with accumulate 1, dinp + acc: their bits.
//
// A workgroup owns TK runs of 8 consecutive k (columns of dinp; values of each W row), the same
// for all its invocations; each invocation owns TM rows of dout, WX apart. For every n the
// workgroup decodes its runs of W row n once (gguf_row_run8's steps: one sub-block scale, two
// code fetches), at addresses uniform across the lanes, and each decoded value feeds WX * TM
// fmas. No shared memory, no barriers.
layout(local_size_x_id = 0) in;
// The ggml type id (gguf_block_ids.h): a constant, so the decoder's switches fold to one format.
layout(constant_id = 3) const uint GGUF_TYPE = REMAT_GGUF_Q8_0;  // ids 0-2: workgroup size
layout(constant_id = 4) const uint TK = 1;  // runs of 8 values per workgroup
layout(constant_id = 5) const uint TM = 4;  // dout rows per invocation
layout(constant_id = 6) const uint DOUT_VEC4 = 0;  // texel view: 1 RGBA32F, 0 R32F

#ifdef MATMUL_BLOCKS_TEXELS
layout(binding = 0) uniform samplerBuffer Dout;
#else
layout(std430, binding = 0) readonly buffer Dout { float dout[]; };
#endif
layout(std430, binding = 1) readonly buffer Wgt { uint w_words[]; };
layout(std430, binding = 2) buffer Dinp { float dinp[]; };
layout(push_constant) uniform Push { MatmulBlocksParams p; };

#define GGUF_WORDS w_words
#include "gguf_blocks.glsl"

const uint MAX_M = 8;
const uint MAX_K = 4;

// dout elements i..i+3 (i % 4 == 0 where DOUT_VEC4).
vec4 dout4(uint i) {
#ifdef MATMUL_BLOCKS_TEXELS
  if (DOUT_VEC4 != 0) return texelFetch(Dout, int(i / 4));
  return vec4(texelFetch(Dout, int(i)).x, texelFetch(Dout, int(i + 1)).x,
              texelFetch(Dout, int(i + 2)).x, texelFetch(Dout, int(i + 3)).x);
#else
  return vec4(dout[i], dout[i + 1], dout[i + 2], dout[i + 3]);
#endif
}

// dout element i.
float dout1(uint i) {
#ifdef MATMUL_BLOCKS_TEXELS
  if (DOUT_VEC4 != 0) return texelFetch(Dout, int(i / 4))[i % 4];
  return texelFetch(Dout, int(i)).x;
#else
  return dout[i];
#endif
}

void main() {
  const uint WX = gl_WorkGroupSize.x;
  // More runs of k than one grid dimension holds: the groups continue along z.
  const uint k0 = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * TK * 8;
  const uint m0 = gl_WorkGroupID.x * WX * TM + gl_LocalInvocationID.x;
  if (k0 >= p.K) return;  // uniform: lanes past M stay, clamped, so W's loads stay uniform

  const uint per_block = gguf_block_values(GGUF_TYPE);
  const uint block_bytes = gguf_block_bytes(GGUF_TYPE);
  // Runs past K (the last workgroup's) repeat the last run; they are never stored.
  uint boff[MAX_K];
  uint e[MAX_K];
  [[unroll]] for (uint t = 0; t < TK; ++t) {
    const uint k = min(k0 + 8 * t, p.K - 8);
    boff[t] = k / per_block * block_bytes;
    e[t] = k % per_block;
  }
  uint rows[MAX_M];
  uint drow[MAX_M];
  [[unroll]] for (uint j = 0; j < TM; ++j) {
    rows[j] = min(m0 + j * WX, p.M - 1);
    drow[j] = rows[j] * p.ld + p.n_offset;
  }

  // accumulate 2: a later piece of W's rows continues the sum the earlier pieces stored.
  vec4 acc[MAX_M][2 * MAX_K];
  [[unroll]] for (uint j = 0; j < TM; ++j)
    [[unroll]] for (uint t = 0; t < 2 * TK; ++t) {
      const uint o = rows[j] * p.K + min(k0 + 8 * (t / 2), p.K - 8) + 4 * (t % 2);
      acc[j][t] = p.accumulate == 2
                      ? vec4(dinp[o], dinp[o + 1], dinp[o + 2], dinp[o + 3])
                      : vec4(0.0);
    }

  // N/4 iterations of four n (llvmpipe ends an invocation's loops after 65535 in total), then
  // the last N % 4 one at a time; every chain takes its n in ascending order.
  const uint N4 = p.N / 4 * 4;
  for (uint n = 0; n < N4; n += 4) {
    vec4 a[MAX_M];
    [[unroll]] for (uint j = 0; j < TM; ++j) a[j] = dout4(drow[j] + n);
    [[unroll]] for (uint u = 0; u < 4; ++u) {
      const uint r = (n + u) * p.row_bytes;
      [[unroll]] for (uint t = 0; t < TK; ++t) {
        const GgufScale s = gguf_sub_scale(GGUF_TYPE, r + boff[t], e[t]);
        const vec4 lo = gguf_apply4(GGUF_TYPE, s, gguf_codes4(GGUF_TYPE, r + boff[t], e[t]));
        const vec4 hi = gguf_apply4(GGUF_TYPE, s, gguf_codes4(GGUF_TYPE, r + boff[t], e[t] + 4));
        [[unroll]] for (uint j = 0; j < TM; ++j) {
          acc[j][2 * t] = fma(vec4(a[j][u]), lo, acc[j][2 * t]);
          acc[j][2 * t + 1] = fma(vec4(a[j][u]), hi, acc[j][2 * t + 1]);
        }
      }
    }
  }
  for (uint n = N4; n < p.N; ++n) {
    const uint r = n * p.row_bytes;
    [[unroll]] for (uint t = 0; t < TK; ++t) {
      const GgufScale s = gguf_sub_scale(GGUF_TYPE, r + boff[t], e[t]);
      const vec4 lo = gguf_apply4(GGUF_TYPE, s, gguf_codes4(GGUF_TYPE, r + boff[t], e[t]));
      const vec4 hi = gguf_apply4(GGUF_TYPE, s, gguf_codes4(GGUF_TYPE, r + boff[t], e[t] + 4));
      [[unroll]] for (uint j = 0; j < TM; ++j) {
        const float a = dout1(drow[j] + n);
        acc[j][2 * t] = fma(vec4(a), lo, acc[j][2 * t]);
        acc[j][2 * t + 1] = fma(vec4(a), hi, acc[j][2 * t + 1]);
      }
    }
  }

  [[unroll]] for (uint j = 0; j < TM; ++j) {
    const uint m = m0 + j * WX;
    if (m >= p.M) break;
    [[unroll]] for (uint t = 0; t < TK; ++t) {
      const uint k = k0 + 8 * t;
      if (k >= p.K) break;
      [[unroll]] for (uint h = 0; h < 2; ++h)
        [[unroll]] for (uint c = 0; c < 4; ++c) {
          const uint o = m * p.K + k + 4 * h + c;
          const float v = acc[j][2 * t + h][c];
          dinp[o] = p.accumulate == 1 ? dinp[o] + v : v;
        }
    }
  }
}
