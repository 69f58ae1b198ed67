// Included by matmul_blocks_forward*.comp, which say how inp is read: a storage buffer of vec4
// (GPUs), or an RGBA32F texel view where the wrapper defines MATMUL_BLOCKS_TEXELS (CPU drivers,
// DeviceQuirks::texel_fetch_beats_storage_loads).
#extension GL_EXT_control_flow_attributes : require
#include "gguf_block_ids.h"
#include "matmul_blocks_params.h"

// out[M,N] = inp[M,K] * W^T (+ bias) with W [N,K] (out, in) in a ggml block type, decoded where
// it is read: each output is the fma chain of matmul_forward.comp and matmul_dot_texels.comp on
// the decoded f32 W, fma(inp[m,k], W[n,k], acc) for k = 0, 1, .., K-1 from acc = 0, then
// + bias[n], so it has their bits (gguf_blocks.glsl's values are decode_blocks' bit for bit).
//
// A workgroup owns TN rows of W (output columns), the same for all its invocations; each
// invocation owns TM rows of inp, WX apart. W is decoded once per workgroup and run of 16 values:
// the addresses are uniform, so a CPU driver loads the block bytes once for all lanes, and every
// decoded value feeds WX * TM fmas. A run of 16 lies in one sub-block of every block format, so
// its scale (gguf_sub_scale) is decoded once and its codes four at a time (gguf_codes4,
// gguf_apply4). No shared memory, no barriers.
layout(local_size_x_id = 0) in;
// The ggml type id (gguf_block_ids.h): a constant, so the decoder's switches fold to one format.
layout(constant_id = 3) const uint GGUF_TYPE = REMAT_GGUF_Q8_0;  // ids 0-2: workgroup size
layout(constant_id = 4) const uint TN = 2;  // W rows per workgroup
layout(constant_id = 5) const uint TM = 4;  // inp rows per invocation

#ifdef MATMUL_BLOCKS_TEXELS
layout(binding = 0) uniform samplerBuffer Inp;
#define INP4(t) texelFetch(Inp, int(t))
#else
layout(std430, binding = 0) readonly buffer Inp { vec4 inp4[]; };
#define INP4(t) inp4[t]
#endif
layout(std430, binding = 1) readonly buffer Wgt { uint w_words[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { float outp[]; };
layout(push_constant) uniform Push { MatmulBlocksParams p; };

#define GGUF_WORDS w_words
#include "gguf_blocks.glsl"

const uint MAX_T = 16;
const uint RUN = 16;

void main() {
  const uint WX = gl_WorkGroupSize.x;
  // More W rows than one grid dimension holds: the groups of rows continue along z.
  const uint n0 = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * TN;
  const uint m0 = gl_WorkGroupID.x * WX * TM + gl_LocalInvocationID.x;
  if (n0 >= p.N) return;  // uniform: lanes past M stay, clamped, so loads stay uniform

  const uint per_block = gguf_block_values(GGUF_TYPE);
  const uint block_bytes = gguf_block_bytes(GGUF_TYPE);
  uint wrow[MAX_T];
  uint xrow[MAX_T];
  [[unroll]] for (uint i = 0; i < TN; ++i) wrow[i] = min(n0 + i, p.N - 1) * p.row_bytes;
  [[unroll]] for (uint j = 0; j < TM; ++j) xrow[j] = min(m0 + j * WX, p.M - 1) * (p.K / 4);
  float acc[MAX_T][MAX_T];
  [[unroll]] for (uint i = 0; i < TN; ++i)
    [[unroll]] for (uint j = 0; j < TM; ++j) acc[i][j] = 0.0;

  // K/16 iterations (llvmpipe ends an invocation's loops after 65535 in total).
  for (uint k = 0; k < p.K; k += RUN) {
    const uint e = k % per_block;
    uint b[MAX_T];
    GgufScale s[MAX_T];
    [[unroll]] for (uint i = 0; i < TN; ++i) {
      b[i] = wrow[i] + k / per_block * block_bytes;
      s[i] = gguf_sub_scale(GGUF_TYPE, b[i], e);
    }
    [[unroll]] for (uint u = 0; u < RUN / 4; ++u) {
      vec4 w[MAX_T];
      [[unroll]] for (uint i = 0; i < TN; ++i)
        w[i] = gguf_apply4(GGUF_TYPE, s[i], gguf_codes4(GGUF_TYPE, b[i], e + 4 * u));
      [[unroll]] for (uint j = 0; j < TM; ++j) {
        const vec4 x = INP4(xrow[j] + k / 4 + u);
        [[unroll]] for (uint i = 0; i < TN; ++i) {
          float t = acc[i][j];
          t = fma(x.x, w[i].x, t);
          t = fma(x.y, w[i].y, t);
          t = fma(x.z, w[i].z, t);
          acc[i][j] = fma(x.w, w[i].w, t);
        }
      }
    }
  }

  [[unroll]] for (uint i = 0; i < TN; ++i) {
    const uint n = n0 + i;
    if (n >= p.N) break;
    [[unroll]] for (uint j = 0; j < TM; ++j) {
      const uint m = m0 + j * WX;
      if (m >= p.M) break;
      float v = acc[i][j];
      if (p.has_bias != 0) v += bias[p.n_offset + n];
      outp[m * p.ld + p.n_offset + n] = v;
    }
  }
}
