#version 450
#extension GL_GOOGLE_include_directive : require
#include "embedding_params.h"

// embedding_backward.comp for CPU drivers (DeviceQuirks::texel_fetch_beats_storage_loads): each
// invocation owns four channels (one vec4 column) instead of one, reads dx through an RGBA32F
// texel view and the gradients as vec4s, and the host uses it only where C is a multiple of 4.
// Every element gets the storage kernel's sums in the storage kernel's order (positions r = 0,
// 1, 2, ... for dwte and packed dwpe, the batch b = 0, 1, ... for plain dwpe), so the bits are
// the same; see embedding_backward.comp for the layout of the invocations.
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Tokens { uint tokens[]; };
layout(binding = 1) uniform textureBuffer dx4;
layout(std430, binding = 2) buffer DWte { vec4 dwte4[]; };
layout(std430, binding = 3) buffer DWpe { vec4 dwpe4[]; };
layout(std430, binding = 4) readonly buffer RowPositions { uint row_positions[]; };
layout(push_constant) uniform Push { EmbeddingBackwardParams p; };

vec4 dx_at(uint r, uint c4) {
  return texelFetch(dx4, int(r * (p.C / 4) + c4));
}

void add_position(uint r, uint c4) {
  const uint tok = tokens[r];
  if (tok >= p.vocab_begin && tok - p.vocab_begin < p.vocab_count) {
    const uint k = (tok - p.vocab_begin) * (p.C / 4) + c4;
    dwte4[k] = dwte4[k] + dx_at(r, c4) * p.scale;  // * 1.0 changes no bit
  }
}

void main() {
  const uint C4 = p.C / 4;
  const uint i = gl_GlobalInvocationID.x;
  const uint wg = gl_WorkGroupSize.x;
  const uint wte_invocations = ((C4 + wg - 1) / wg) * wg;
  if (i < wte_invocations) {
    const uint c4 = i;
    if (c4 >= C4) return;
    // Several rows per loop iteration, in order: llvmpipe's 65535-iteration limit.
    if (p.accumulate_wte == 0) {
      uint v = 0;
      for (; v + 8 <= p.vocab_count; v += 8)
        for (uint j = 0; j < 8; ++j) dwte4[(v + j) * C4 + c4] = vec4(0.0);
      for (; v < p.vocab_count; ++v) dwte4[v * C4 + c4] = vec4(0.0);
    }
    uint r = 0;
    for (; r + 4 <= p.rows; r += 4)
      for (uint j = 0; j < 4; ++j) add_position(r + j, c4);
    for (; r < p.rows; ++r) add_position(r, c4);
  } else if (p.packed != 0) {
    const uint c4 = i - wte_invocations;
    if (c4 >= C4) return;
    if (p.accumulate_wpe == 0)
      for (uint t = 0; t < p.ctx; ++t) dwpe4[t * C4 + c4] = vec4(0.0);
    uint r = 0;
    for (; r + 4 <= p.rows; r += 4)
      for (uint j = 0; j < 4; ++j) {
        const uint k = row_positions[r + j] * C4 + c4;
        dwpe4[k] = dwpe4[k] + dx_at(r + j, c4);
      }
    for (; r < p.rows; ++r) {
      const uint k = row_positions[r] * C4 + c4;
      dwpe4[k] = dwpe4[k] + dx_at(r, c4);
    }
  } else {
    const uint c4 = i - wte_invocations;
    if (c4 >= C4) return;
    for (uint t = 0; t < p.ctx; ++t) {
      const uint k = t * C4 + c4;
      if (t < p.T) {
        vec4 acc = p.accumulate_wpe != 0 ? dwpe4[k] : vec4(0.0);
        for (uint r = t; r < p.rows; r += p.T) acc += dx_at(r, c4);
        dwpe4[k] = acc;
      } else if (p.accumulate_wpe == 0) {
        dwpe4[k] = vec4(0.0);
      }
    }
  }
}
