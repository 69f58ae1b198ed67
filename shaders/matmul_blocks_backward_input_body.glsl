// Included by matmul_blocks_backward_input*.comp, which say how the operands are read: storage
// buffers (GPUs), or texel views where the wrapper defines MATMUL_BLOCKS_TEXELS (CPU drivers,
// DeviceQuirks::texel_fetch_beats_storage_loads): W's words RGBA32UI; dout RGBA32F with DOUT_VEC4
// = 1 (its rows and offset multiples of 4), else R32F.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "gguf_block_ids.h"
#include "matmul_blocks_params.h"

// dinp[M,K] (+)= dout[M,N] * W with W [N,K] (out, in) in a ggml block type, decoded where it is
// read. matmul_outer_texels.comp with its Y (W's rows, vec4 along k) decoded instead of fetched:
// each output is the chain of that kernel and of matmul_backward_input.comp on the decoded f32
// W, fma(dout[m,n], W[n,k], acc) for n = 0, 1, .., N-1 from acc = 0 (from dinp with accumulate
// 2), stored as acc or, with accumulate 1, dinp + acc: their bits.
//
// A workgroup owns TI rows of dout, the same for all its invocations; each invocation owns TK
// runs of 16 consecutive k and, for every n, decodes its runs of W row n (gguf_row_run16's steps:
// one sub-block scale, one 16-byte fetch per array of codes), every decoded value feeding TI
// fmas. X_LANES (shared_x.glsl): dout's texels, the same for every lane, are fetched once per
// subgroup. NG: groups of four n per iteration of the loop over n (CPU drivers store what a loop
// carries once per iteration, so more fmas per accumulator between stores; the host's choice,
// matmul_blocks.cpp). No shared memory: on CPU drivers its loads and stores are per-lane loops,
// dearer than decoding the run again.
layout(local_size_x_id = 0) in;
// The ggml type id (gguf_block_ids.h): a constant, so the decoder's switches fold to one format.
layout(constant_id = 3) const uint GGUF_TYPE = REMAT_GGUF_Q8_0;  // ids 0-2: workgroup size
layout(constant_id = 4) const uint TI = 16;  // dout rows per workgroup
layout(constant_id = 5) const uint TK = 1;   // runs of 16 values per invocation
layout(constant_id = 6) const uint X_LANES = 1;
layout(constant_id = 7) const uint DOUT_VEC4 = 0;  // texel view: 1 RGBA32F, 0 R32F
layout(constant_id = 8) const uint NG = 1;  // groups of four n per loop iteration

#ifdef MATMUL_BLOCKS_TEXELS
layout(binding = 0) uniform textureBuffer Dout;
layout(binding = 1) uniform utextureBuffer Wgt;  // an RGBA32UI view of W's words
#include "matmul_blocks_words.glsl"
#else
layout(std430, binding = 0) readonly buffer Dout { float dout[]; };
layout(std430, binding = 1) readonly buffer Wgt { uint w_words[]; };
#define GGUF_WORDS w_words
#endif
layout(std430, binding = 2) buffer Dinp { float dinp[]; };
layout(push_constant) uniform Push { MatmulBlocksParams p; };

#include "gguf_blocks.glsl"

const uint MAX_T = 16;
#include "shared_x.glsl"
const uint MAX_K = 2;
const uint RUN = 16;

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

// Values k..k+15 of W row n (k % 16 == 0) at byte offset boff of the row, k % per_block = e.
void w_run(uint n, uint boff, uint e, out vec4 w[4]) {
  const uint b = n * p.row_bytes + boff;
  const GgufScale s = gguf_sub_scale(GGUF_TYPE, b, e);
  ivec4 q[4];
  gguf_codes16(GGUF_TYPE, b, e, q);
  [[unroll]] for (uint u = 0; u < 4; ++u) w[u] = gguf_apply4(GGUF_TYPE, s, q[u]);
}

// Chains += dout[rows, n..n+3] * W[n..n+3, the invocation's runs], n % 4 == 0.
void group4(uint n, uint drow[MAX_T], uint own[MAX_SHARED], uint boff[MAX_K], uint e[MAX_K],
            inout vec4 acc[MAX_T][4 * MAX_K]) {
  vec4 a[MAX_T];
  if (SHARED_X) {
    vec4 fetched[MAX_SHARED];
    [[unroll]] for (uint q = 0; q < TI / X_LANES; ++q) fetched[q] = dout4(own[q] + n);
    [[unroll]] for (uint i = 0; i < TI; ++i) a[i] = SHARED_TEXEL(fetched, i);
  } else {
    [[unroll]] for (uint i = 0; i < TI; ++i) a[i] = dout4(drow[i] + n);
  }
  [[unroll]] for (uint u = 0; u < 4; ++u)
    [[unroll]] for (uint t = 0; t < TK; ++t) {
      vec4 w[4];
      w_run(n + u, boff[t], e[t], w);
      [[unroll]] for (uint i = 0; i < TI; ++i)
        [[unroll]] for (uint c = 0; c < 4; ++c)
          acc[i][4 * t + c] = fma(vec4(a[i][u]), w[c], acc[i][4 * t + c]);
    }
}

void main() {
  // More row groups than one grid dimension holds: they continue along z.
  const uint i0 = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * TI;
  const uint k0 = gl_GlobalInvocationID.x * TK * RUN;
  // Lanes past K stay to fetch dout for their subgroup; their runs are clamped, never stored.
  if (i0 >= p.M || (!SHARED_X && k0 >= p.K)) return;

  const uint per_block = gguf_block_values(GGUF_TYPE);
  const uint block_bytes = gguf_block_bytes(GGUF_TYPE);
  uint boff[MAX_K];
  uint e[MAX_K];
  [[unroll]] for (uint t = 0; t < TK; ++t) {
    const uint k = min(k0 + RUN * t, p.K - RUN);
    boff[t] = k / per_block * block_bytes;
    e[t] = k % per_block;
  }
  uint rows[MAX_T];
  uint drow[MAX_T];
  [[unroll]] for (uint i = 0; i < TI; ++i) {
    rows[i] = min(i0 + i, p.M - 1);
    drow[i] = rows[i] * p.ld + p.n_offset;
  }
  uint own[MAX_SHARED];  // this lane's rows to fetch for the subgroup (SHARED_X)
  [[unroll]] for (uint q = 0; q < TI / X_LANES; ++q)
    own[q] = min(i0 + q * X_LANES + gl_SubgroupInvocationID, p.M - 1) * p.ld + p.n_offset;

  // accumulate 2: a later piece of W's rows continues the sum the earlier pieces stored.
  vec4 acc[MAX_T][4 * MAX_K];
  [[unroll]] for (uint i = 0; i < TI; ++i)
    [[unroll]] for (uint c = 0; c < 4 * TK; ++c) {
      const uint o = rows[i] * p.K + min(k0 + RUN * (c / 4), p.K - RUN) + 4 * (c % 4);
      acc[i][c] =
          p.accumulate == 2 ? vec4(dinp[o], dinp[o + 1], dinp[o + 2], dinp[o + 3]) : vec4(0.0);
    }

  // Groups of four n (llvmpipe ends an invocation's loops after 65535 iterations in total), NG
  // of them an iteration, then single groups, then the last (N - n_begin) % 4 one at a time;
  // every chain takes its n in ascending order.
  const uint N4 = p.n_begin + (p.N - p.n_begin) / 4 * 4;
  const uint NG4 = p.n_begin + (p.N - p.n_begin) / (4 * NG) * (4 * NG);
  for (uint n = p.n_begin; n < NG4; n += 4 * NG)
    [[unroll]] for (uint g = 0; g < NG; ++g) group4(n + 4 * g, drow, own, boff, e, acc);
  for (uint n = NG4; n < N4; n += 4) group4(n, drow, own, boff, e, acc);
  for (uint n = N4; n < p.N; ++n)
    [[unroll]] for (uint t = 0; t < TK; ++t) {
      vec4 w[4];
      w_run(n, boff[t], e[t], w);
      [[unroll]] for (uint i = 0; i < TI; ++i) {
        const float a = dout1(drow[i] + n);
        [[unroll]] for (uint c = 0; c < 4; ++c)
          acc[i][4 * t + c] = fma(vec4(a), w[c], acc[i][4 * t + c]);
      }
    }

  [[unroll]] for (uint i = 0; i < TI; ++i) {
    const uint m = i0 + i;
    if (m >= p.M) break;
    [[unroll]] for (uint t = 0; t < TK; ++t) {
      const uint k = k0 + RUN * t;
      if (k >= p.K) break;
      [[unroll]] for (uint c = 0; c < 4; ++c)
        [[unroll]] for (uint l = 0; l < 4; ++l) {
          const uint o = m * p.K + k + 4 * c + l;
          const float v = acc[i][4 * t + c][l];
          dinp[o] = p.accumulate == 1 ? dinp[o] + v : v;
        }
    }
  }
}
