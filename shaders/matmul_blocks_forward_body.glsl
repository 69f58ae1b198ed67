// Included by matmul_blocks_forward*.comp, which say how the operands are read: storage buffers
// (GPUs), or texel views where the wrapper defines MATMUL_BLOCKS_TEXELS (CPU drivers,
// DeviceQuirks::texel_fetch_beats_storage_loads): inp RGBA32F, W's words RGBA32UI.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "gguf_block_ids.h"
#include "matmul_blocks_params.h"

// out[M,N] = inp[M,K] * W^T (+ bias) with W [N,K] (out, in) in a ggml block type, decoded where
// it is read. matmul_dot_texels.comp with its Y (W's rows) decoded instead of fetched: each
// output is the fma chain of that kernel and of matmul_forward.comp on the decoded f32 W,
// fma(inp[m,k], W[n,k], acc) for k = 0, 1, .., K-1 from acc = 0, then + bias[n], so it has their
// bits (gguf_blocks.glsl's values are decode_blocks' bit for bit).
//
// A workgroup owns TI rows of inp, the same for all its invocations; each invocation owns TJ rows
// of W, WX apart, and decodes them in runs of 16 values: a run lies in one sub-block of every
// block format, so its scale is decoded once (gguf_sub_scale) and its codes with one 16-byte
// fetch per array (gguf_codes16), and every decoded value feeds TI fmas. X_LANES (shared_x.glsl):
// inp's texels, the same for every lane, are fetched once per subgroup. No shared memory.
layout(local_size_x_id = 0) in;
// The ggml type id (gguf_block_ids.h): a constant, so the decoder's switches fold to one format.
layout(constant_id = 3) const uint GGUF_TYPE = REMAT_GGUF_Q8_0;  // ids 0-2: workgroup size
layout(constant_id = 4) const uint TI = 16;  // inp rows per workgroup
layout(constant_id = 5) const uint TJ = 8;   // W rows per invocation
layout(constant_id = 6) const uint X_LANES = 1;

#ifdef MATMUL_BLOCKS_TEXELS
layout(binding = 0) uniform textureBuffer Inp;
#define INP4(t) texelFetch(Inp, int(t))
layout(binding = 1) uniform utextureBuffer Wgt;  // an RGBA32UI view of W's words
#include "matmul_blocks_words.glsl"
#else
layout(std430, binding = 0) readonly buffer Inp { vec4 inp4[]; };
#define INP4(t) inp4[t]
layout(std430, binding = 1) readonly buffer Wgt { uint w_words[]; };
#define GGUF_WORDS w_words
#endif
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Out { float outp[]; };
layout(push_constant) uniform Push { MatmulBlocksParams p; };

#include "gguf_blocks.glsl"

const uint MAX_T = 16;
#include "shared_x.glsl"
const uint RUN = 16;

void main() {
  const uint WX = gl_WorkGroupSize.x;
  // More row groups than one grid dimension holds: they continue along z.
  const uint i0 = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * TI;
  const uint j0 = gl_WorkGroupID.x * WX * TJ + gl_LocalInvocationID.x;
  // Lanes past N stay to fetch inp for their subgroup; their rows are clamped, never stored.
  if (i0 >= p.M || (!SHARED_X && j0 >= p.N)) return;

  const uint per_block = gguf_block_values(GGUF_TYPE);
  const uint block_bytes = gguf_block_bytes(GGUF_TYPE);
  const uint K4 = p.K / 4;
  uint xrow[MAX_T];
  uint wrow[MAX_T];
  [[unroll]] for (uint i = 0; i < TI; ++i) xrow[i] = min(i0 + i, p.M - 1) * K4;
  [[unroll]] for (uint j = 0; j < TJ; ++j) wrow[j] = min(j0 + j * WX, p.N - 1) * p.row_bytes;
  uint own[MAX_SHARED];  // this lane's rows to fetch for the subgroup (SHARED_X)
  [[unroll]] for (uint k = 0; k < TI / X_LANES; ++k)
    own[k] = min(i0 + k * X_LANES + gl_SubgroupInvocationID, p.M - 1) * K4;
  float acc[MAX_T][MAX_T];
  [[unroll]] for (uint i = 0; i < TI; ++i)
    [[unroll]] for (uint j = 0; j < TJ; ++j) acc[i][j] = 0.0;

  // K/16 iterations (llvmpipe ends an invocation's loops after 65535 in total).
  for (uint k = 0; k < p.K; k += RUN) {
    const uint e = k % per_block;
    GgufScale s[MAX_T];
    ivec4 q[MAX_T][4];
    [[unroll]] for (uint j = 0; j < TJ; ++j) {
      const uint b = wrow[j] + k / per_block * block_bytes;
      s[j] = gguf_sub_scale(GGUF_TYPE, b, e);
      gguf_codes16(GGUF_TYPE, b, e, q[j]);
    }
    [[unroll]] for (uint u = 0; u < RUN / 4; ++u) {
      vec4 a[MAX_T];
      if (SHARED_X) {
        vec4 fetched[MAX_SHARED];
        [[unroll]] for (uint q = 0; q < TI / X_LANES; ++q) fetched[q] = INP4(own[q] + k / 4 + u);
        [[unroll]] for (uint i = 0; i < TI; ++i) a[i] = SHARED_TEXEL(fetched, i);
      } else {
        [[unroll]] for (uint i = 0; i < TI; ++i) a[i] = INP4(xrow[i] + k / 4 + u);
      }
      [[unroll]] for (uint j = 0; j < TJ; ++j) {
        const vec4 w = gguf_apply4(GGUF_TYPE, s[j], q[j][u]);
        [[unroll]] for (uint i = 0; i < TI; ++i) {
          float t = acc[i][j];
          t = fma(a[i].x, w.x, t);
          t = fma(a[i].y, w.y, t);
          t = fma(a[i].z, w.z, t);
          acc[i][j] = fma(a[i].w, w.w, t);
        }
      }
    }
  }

  [[unroll]] for (uint i = 0; i < TI; ++i) {
    const uint m = i0 + i;
    if (m >= p.M) break;
    [[unroll]] for (uint j = 0; j < TJ; ++j) {
      const uint n = j0 + j * WX;
      if (n >= p.N) break;
      float v = acc[i][j];
      if (p.has_bias != 0) v += bias[p.n_offset + n];
      outp[m * p.ld + p.n_offset + n] = v;
    }
  }
}
