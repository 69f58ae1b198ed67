#version 450
#extension GL_GOOGLE_include_directive : require
#include "embedding_params.h"

// Embedding gradients without atomics, in one dispatch with two kinds of invocation:
//   invocations [0, wte_invocations):  one channel c of dwte each. It owns column c of every
//       vocabulary row in the bound piece, so no two invocations write the same float; it zeroes
//       the column when overwriting, then walks the positions r = 0, 1, 2, ... in order and
//       adds dx[r, c] to the row of tokens[r]. Repeated tokens are thus summed in position
//       order, the same on every run and under every checkpoint policy.
//   the next C (first piece only):     one channel c of dwpe each; for every position t < T it
//       sums dx[b*T + t, c] over the batch b = 0, 1, ... in order; rows t >= T get nothing
//       (0 when overwriting). Packed rows (p.packed): zeroes column c when overwriting, then
//       walks the rows r = 0, 1, ... in order adding dx[r, c] to dwpe[row_positions[r], c], like
//       dwte (for plain rows that is the same sum in the same order).
// 2C invocations is little parallelism for a GPU, but the work is only 2*BT*C adds (plus the
// V*C zeroing when overwriting, which is coalesced across neighbouring channels), and the group
// count stays far below device limits for any ctx.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 1) readonly buffer DX { float dx[]; };
layout(std430, binding = 2) buffer DWte { float dwte[]; };
layout(std430, binding = 3) buffer DWpe { float dwpe[]; };
layout(std430, binding = 4) readonly buffer RowPositions { uint row_positions[]; };
layout(push_constant) uniform Push { EmbeddingBackwardParams p; };

void add_position(uint r, uint c) {
  uint tok = tokens[r];
  if (tok >= p.vocab_begin && tok - p.vocab_begin < p.vocab_count) {
    uint k = (tok - p.vocab_begin) * p.C + c;
    dwte[k] = dwte[k] + dx[r * p.C + c] * p.scale;  // * 1.0 changes no bit
  }
}

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint wg = gl_WorkGroupSize.x;
  uint wte_invocations = ((p.C + wg - 1) / wg) * wg;
  if (i < wte_invocations) {
    uint c = i;
    if (c >= p.C) return;
    // Several rows per loop iteration, still in order: llvmpipe ends an invocation after 65535
    // loop iterations in total (its LP_MAX_TGSI_LOOP_ITERATIONS limiter), and V + BT plain
    // iterations exceed that already at GPT-2's vocabulary with BT = 16384.
    if (p.accumulate_wte == 0) {
      uint v = 0;
      for (; v + 8 <= p.vocab_count; v += 8)
        for (uint j = 0; j < 8; ++j) dwte[(v + j) * p.C + c] = 0.0;
      for (; v < p.vocab_count; ++v) dwte[v * p.C + c] = 0.0;
    }
    uint r = 0;
    for (; r + 4 <= p.rows; r += 4)
      for (uint j = 0; j < 4; ++j) add_position(r + j, c);
    for (; r < p.rows; ++r) add_position(r, c);
  } else if (p.packed != 0) {
    uint c = i - wte_invocations;
    if (c >= p.C) return;
    if (p.accumulate_wpe == 0)
      for (uint t = 0; t < p.ctx; ++t) dwpe[t * p.C + c] = 0.0;
    uint r = 0;
    for (; r + 4 <= p.rows; r += 4)
      for (uint j = 0; j < 4; ++j) {
        const uint k = row_positions[r + j] * p.C + c;
        dwpe[k] = dwpe[k] + dx[(r + j) * p.C + c];
      }
    for (; r < p.rows; ++r) {
      const uint k = row_positions[r] * p.C + c;
      dwpe[k] = dwpe[k] + dx[r * p.C + c];
    }
  } else {
    uint c = i - wte_invocations;
    if (c >= p.C) return;
    for (uint t = 0; t < p.ctx; ++t) {
      uint k = t * p.C + c;
      if (t < p.T) {
        float acc = p.accumulate_wpe != 0 ? dwpe[k] : 0.0;
        for (uint r = t; r < p.rows; r += p.T) acc += dx[r * p.C + c];
        dwpe[k] = acc;
      } else if (p.accumulate_wpe == 0) {
        dwpe[k] = 0.0;
      }
    }
  }
}
