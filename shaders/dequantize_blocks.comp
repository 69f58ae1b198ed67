#version 450
#extension GL_GOOGLE_include_directive : require
// Decodes a row of ggml blocks (GGUF tensor data) to float32, the values formats/gguf_blocks.h's
// decode_blocks writes, bit for bit: the kernel that proves gguf_blocks.glsl, the decoders the
// matmul, embedding and head kernels read their block-stored weights with.
#include "dequantize_blocks_params.h"
#include "gguf_block_ids.h"

layout(local_size_x_id = 0) in;
// The ggml type id (gguf_block_ids.h): a specialization constant, so the decoder's switches fold
// to the one format, as in the kernels that decode weights where they read them.
layout(constant_id = 3) const uint GGUF_TYPE = REMAT_GGUF_Q8_0;

layout(std430, binding = 0) readonly buffer Blocks { uint blocks[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { DequantizeBlocksParams p; };

#define GGUF_WORDS blocks
#include "gguf_blocks.glsl"

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint runs = (p.count + p.run - 1u) / p.run;
  for (uint r = gl_GlobalInvocationID.x; r < runs; r += stride) {
    const uint k = r * p.run;
    if (p.run == 16u && k + 16u <= p.count) {
      vec4 v[4];
      gguf_row_run16(GGUF_TYPE, 0u, k, v);
      for (uint j = 0u; j < 4u; ++j)
        for (uint i = 0u; i < 4u; ++i) y[k + 4u * j + i] = v[j][i];
    } else if (p.run == 8u && k + 8u <= p.count) {
      vec4 lo, hi;
      gguf_row_run8(GGUF_TYPE, 0u, k, lo, hi);
      for (uint i = 0u; i < 4u; ++i) {
        y[k + i] = lo[i];
        y[k + 4u + i] = hi[i];
      }
    } else if (p.run == 4u && k + 4u <= p.count) {
      const vec4 v = gguf_row_run4(GGUF_TYPE, 0u, k);
      for (uint i = 0u; i < 4u; ++i) y[k + i] = v[i];
    } else {  // one value at a time, and a float type's tail of fewer than `run` values
      for (uint i = k; i < min(k + p.run, p.count); ++i) y[i] = gguf_row_value(GGUF_TYPE, 0u, i);
    }
  }
}
