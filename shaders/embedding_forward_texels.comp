#version 450
#extension GL_GOOGLE_include_directive : require
#include "embedding_params.h"

// embedding_forward.comp for CPU drivers (DeviceQuirks::texel_fetch_beats_storage_loads), f32
// tables and output: four channels of one row per iteration, the table rows read through
// RGBA32F texel views and x stored as one vec4 (the host uses it only where C is a multiple of
// 4, so a row's channels are whole texels). Each element is the storage kernel's one add (or
// product with the scale), so the bits are the same; a token outside the vocabulary gives NaN
// as there.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Tokens { uint tokens[]; };
layout(binding = 1) uniform textureBuffer wte4;
layout(binding = 2) uniform textureBuffer wpe4;
layout(std430, binding = 3) writeonly buffer X { vec4 x4[]; };
// Packed rows: each token's position in its example (a stand-in, never read, when p.packed is 0).
layout(std430, binding = 4) readonly buffer RowPositions { uint row_positions[]; };
layout(push_constant) uniform Push { EmbeddingParams p; };

void main() {
  const uint C4 = p.C / 4;
  const uint total = p.rows * C4;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const bool last_piece = p.vocab_begin + p.vocab_count >= p.V;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    const uint r = i / C4;
    const uint c4 = i - r * C4;
    const uint tok = tokens[r];
    if (tok >= p.vocab_begin && tok - p.vocab_begin < p.vocab_count) {
      const vec4 e = texelFetch(wte4, int((tok - p.vocab_begin) * C4 + c4));
      const uint t = p.packed != 0 ? row_positions[r] : r % p.T;
      x4[i] = p.positions != 0 ? e + texelFetch(wpe4, int(t * C4 + c4)) : e * p.scale;
    } else if (tok >= p.V && last_piece) {
      x4[i] = vec4(uintBitsToFloat(0x7fc00000u));
    }
  }
}
