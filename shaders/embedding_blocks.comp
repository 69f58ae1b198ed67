#version 450
#extension GL_GOOGLE_include_directive : require
// The token embedding of a table kept in ggml blocks (a QLoRA base): x[r, c] = value c of row
// tokens[r], decoded by gguf_blocks.glsl (the floats formats/gguf_blocks.h's decode_blocks
// writes), then + wpe[t, c] (GPT-2) or · scale (Gemma's sqrt(C); 1 elsewhere) with the operations
// of embedding_forward_body.glsl, so x is that kernel's bits on the decoded table. One run of
// four values per invocation (C is whole blocks, so a multiple of 32).
#include "embedding_blocks_params.h"
#include "gguf_block_ids.h"

layout(local_size_x_id = 0) in;
// The ggml type id: a specialization constant, so the decoder folds to the one format.
layout(constant_id = 3) const uint GGUF_TYPE = REMAT_GGUF_Q8_0;

layout(std430, binding = 0) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 1) readonly buffer Table { uint table[]; };
// The position table (a stand-in, never read, when p.positions is 0).
layout(std430, binding = 2) readonly buffer Wpe { float wpe[]; };
layout(std430, binding = 3) writeonly buffer X { float x[]; };
// Packed rows: each token's position in its example (a stand-in, never read, when p.packed is 0).
layout(std430, binding = 4) readonly buffer RowPositions { uint row_positions[]; };
layout(push_constant) uniform Push { EmbeddingBlocksParams p; };

#define GGUF_WORDS table
#include "gguf_blocks.glsl"

void main() {
  const uint runs_per_row = p.C / 4u;
  const uint total = p.rows * runs_per_row;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const bool last_piece = p.vocab_begin + p.vocab_count >= p.V;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    const uint r = i / runs_per_row;
    const uint k = (i - r * runs_per_row) * 4u;
    const uint tok = tokens[r];
    if (tok >= p.vocab_begin && tok - p.vocab_begin < p.vocab_count) {
      const vec4 v = gguf_row_run4(GGUF_TYPE, (tok - p.vocab_begin) * p.row_bytes, k);
      const uint t = p.packed != 0u ? row_positions[r] : r % p.T;
      for (uint j = 0u; j < 4u; ++j) {
        // One rounding, as on a float table: no multiply-add fused with the decoder's last
        // product.
        precise float y = p.positions != 0u ? v[j] + wpe[t * p.C + k + j] : v[j] * p.scale;
        x[r * p.C + k + j] = y;
      }
    } else if (tok >= p.V && last_piece) {
      // An out-of-range token is a data bug: loud in the loss, as in embedding_forward.
      for (uint j = 0u; j < 4u; ++j) x[r * p.C + k + j] = uintBitsToFloat(0x7fc00000u);
    }
  }
}
