// Included by attention_forward.comp and attention_forward_texels.comp, which bind q, k and v
// (bindings 0-2) as storage buffers or texel views and define Q(i), K(i) and V(i), vec4 i of each.
// Where the heads lie in them (GPT-2's fused qkv or separate tensors) is in the push constants
// (attention_params.h).
//
// Causal grouped-query attention forward, flash-style (FlashAttention-2, Dao 2023): one
// invocation per (batch, query head, query row) streams the keys 0..t of its key/value head in
// blocks of BC with an online softmax, so the T x T score matrix is never stored. Writes the
// output row and the row's log-sum-exp of the scaled scores, from which the backward recomputes
// the probabilities.
//
// No barriers (on CPU implementations a barrier is a context switch, and lavapipe's 32 KiB would
// not hold K/V tiles for hs = 128 anyway): the row's q and accumulator are private to the
// invocation (kept in workgroup memory, below). Keys are visited in a fixed order: deterministic.
//
// Head rows are handled as vec4s, U per loop iteration (U steps unrolled). llvmpipe ends every
// loop of an invocation once their iterations add up to 65535 (a hang guard shared by all loops,
// LP_MAX_TGSI_LOOP_ITERATIONS): float-at-a-time loops would silently truncate rows beyond
// t * hs ~ 30000, while full unrolling takes minutes to compile there. hs must be a multiple of 4.
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint HS = 64;  // head size D; ids 0-2 are the workgroup size
layout(constant_id = 4) const uint BC = 8;   // keys per block (one rescale of acc per block)
layout(constant_id = 5) const uint U = 2;    // vec4s per loop iteration; divides HS / 4
const uint H4 = HS / 4;

layout(std430, binding = 3) writeonly buffer Out { vec4 outp[]; };
layout(std430, binding = 4) writeonly buffer Lse { float lse[]; };
layout(push_constant) uniform Push { AttentionParams p; };

// The row's q and output accumulator (q_s, acc_s): see attention_rows.glsl for where they live.
const uint WX = gl_WorkGroupSize.x;
#include "attention_rows.glsl"
ROWS_SHARED(q_s)
ROWS_SHARED(acc_s)

// Finite stand-in for -infinity: exp(NEG_BIG - x) is 0 without inf arithmetic.
const float NEG_BIG = -3.0e38;

void main() {
  const uint t = gl_GlobalInvocationID.x;
  const uint bh = gl_GlobalInvocationID.y;  // b * NH + h
  if (t >= p.T || bh >= p.B * p.NH) return;
  const uint b = bh / p.NH, h = bh % p.NH;
  const uint g = h / (p.NH / p.KV);  // the key/value head of query head h
  // Offsets below are in vec4s.
  const uint h4 = HEAD_VEC4S;
  const uint qbase = b * p.T * p.q_stride + p.q_offset + h * H4;  // position 0 of this (b, h)
  const uint kbase = b * p.T * p.k_stride + p.k_offset + g * H4;
  const uint vbase = b * p.T * p.v_stride + p.v_offset + g * H4;

  const uint lane = gl_LocalInvocationID.x;
  ROW_PRIVATE(q_s)
  ROW_PRIVATE(acc_s)
  HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
    [[unroll]] for (uint u = 0; u < U; ++u) {
      ROW(q_s, d0 + u) = Q(qbase + t * p.q_stride + d0 + u) * p.scale;  // scores are (q * scale) . k
      ROW(acc_s, d0 + u) = vec4(0.0);
    }
  }
  float row_max = NEG_BIG;  // running maximum of the scores seen
  float denom = 0.0;        // running sum of exp(score - row_max)

  for (uint s0 = 0; s0 <= t; s0 += BC) {
    // Scores of this block; keys past t (the causal mask) get NEG_BIG and weigh exactly 0.
    float sc[BC];
    float block_max = row_max;
    for (uint j = 0; j < BC; ++j) {
      const uint ko = kbase + min(s0 + j, t) * p.k_stride;
      float s = 0.0;
      HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) s += dot(ROW(q_s, d0 + u), K(ko + d0 + u));
      }
      sc[j] = s0 + j <= t ? s : NEG_BIG;
      block_max = max(block_max, sc[j]);
    }
    // Rescale what was accumulated under the old maximum once per block.
    const float correction = exp(row_max - block_max);
    denom *= correction;
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) ROW(acc_s, d0 + u) *= correction;
    }
    for (uint j = 0; j < BC; ++j) {
      const float w = exp(sc[j] - block_max);
      denom += w;
      const uint vo = vbase + min(s0 + j, t) * p.v_stride;
      HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u)
          ROW(acc_s, d0 + u) = fma(vec4(w), V(vo + d0 + u), ROW(acc_s, d0 + u));
      }
    }
    row_max = block_max;
  }

  const uint oo = (b * p.T + t) * p.NH * H4 + h * H4;
  const float inv = 1.0 / denom;
  HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
    [[unroll]] for (uint u = 0; u < U; ++u) outp[oo + d0 + u] = ROW(acc_s, d0 + u) * inv;
  }
  lse[bh * p.T + t] = row_max + log(denom);
}
