// Included by embedding_forward*.comp, which choose the operands' storage (operand_storage.glsl):
// B = the tables wte and wpe, C = x (there is no operand A: tokens are u32).
#include "embedding_params.h"
#include "operand_storage.glsl"

// x[r, c] = wte[tokens[r], c] + wpe[t, c], t = r % T or (packed rows) row_positions[r], one element per invocation (grid-stride); without
// positions x[r, c] = wte[tokens[r], c] * scale, exactly wte's value at scale 1 (no + 0.0, which
// would turn -0.0 into +0.0; a product with 1.0 keeps every bit), sqrt(C) for Gemma.
// wte is bound as the vocabulary rows [vocab_begin, vocab_begin + vocab_count) only; positions
// whose token lies elsewhere are written by another piece's dispatch.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 1) readonly buffer Wte { B_T wte[]; };
layout(std430, binding = 2) readonly buffer Wpe { B_T wpe[]; };
layout(std430, binding = 3) writeonly buffer X { C_T x[]; };
// Packed rows: each token's position in its example (a stand-in, never read, when p.packed is 0).
layout(std430, binding = 4) readonly buffer RowPositions { uint row_positions[]; };
layout(push_constant) uniform Push { EmbeddingParams p; };

void main() {
  uint total = p.rows * p.C;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  bool last_piece = p.vocab_begin + p.vocab_count >= p.V;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
    uint r = i / p.C;
    uint c = i - r * p.C;
    uint tok = tokens[r];
    if (tok >= p.vocab_begin && tok - p.vocab_begin < p.vocab_count) {
      const float e = B_LOAD(wte[(tok - p.vocab_begin) * p.C + c]);
      const uint t = p.packed != 0 ? row_positions[r] : r % p.T;
      x[i] = C_STORE(p.positions != 0 ? e + B_LOAD(wpe[t * p.C + c]) : e * p.scale);
    } else if (tok >= p.V && last_piece) {
      // An out-of-range token is a data bug: make it loud in the loss instead of reading
      // another row or memory outside the table.
      x[i] = C_STORE(uintBitsToFloat(0x7fc00000u));
    }
  }
}
