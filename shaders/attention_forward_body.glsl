// Included by attention_forward.comp and attention_forward_texels.comp, which bind q, k and v
// (bindings 0-2) as storage buffers or texel views and define Q(i), K(i) and V(i), vec4 i of each.
// Where the heads lie in them (GPT-2's fused qkv or separate tensors) is in the push constants
// (attention_params.h).
//
// Causal grouped-query attention forward, flash-style (FlashAttention-2, Dao 2023): one
// invocation per (batch, query head, R query rows) streams the keys 0..t of its key/value head
// (from t - window + 1 with a sliding window, from its example's start in packed rows) in
// blocks of BC with an online softmax, so the T x T score matrix is never stored. Writes the
// output rows and each row's log-sum-exp of the scaled scores, from which the backward recomputes
// the probabilities. The R rows share each key's reads; each row's arithmetic is that of R = 1.
//
// No barriers (on CPU implementations a barrier is a context switch, and lavapipe's 32 KiB would
// not hold K/V tiles for hs = 128 anyway): the rows' q and accumulators are private to the
// invocation (in workgroup memory or registers, attention_rows.glsl). Keys are visited in a fixed
// order: deterministic.
//
// Head rows are handled as vec4s, U per loop iteration (U steps unrolled) where the head loops
// are loops. llvmpipe ends every loop of an invocation once their iterations add up to 65535 (a
// hang guard shared by all loops, LP_MAX_TGSI_LOOP_ITERATIONS): float-at-a-time loops would
// silently truncate rows beyond t * hs ~ 30000. hs must be a multiple of 4.
#include "act16.glsl"  // out is an activation: ACT4_T, fp32 unless the wrapper says otherwise
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint HS = 64;  // head size D; ids 0-2 are the workgroup size
layout(constant_id = 4) const uint BC = 8;   // keys per block (one rescale of acc per block)
layout(constant_id = 5) const uint U = 2;    // vec4s per loop iteration; divides HS / 4
layout(constant_id = 6) const uint R = 1;    // rows per invocation; 1 with rows in workgroup memory
const uint H4 = HS / 4;

layout(std430, binding = 3) writeonly buffer Out { ACT4_T outp[]; };
layout(std430, binding = 4) writeonly buffer Lse { float lse[]; };
layout(std430, binding = 5) readonly buffer Positions { uint positions[]; };
layout(push_constant) uniform Push { AttentionParams p; };

// The row's q and output accumulator (q_s, acc_s): see attention_rows.glsl for where they live.
const uint WX = gl_WorkGroupSize.x;
#include "attention_rows.glsl"
ROWS_SHARED(q_s)
ROWS_SHARED(acc_s)

// Finite stand-in for -infinity: exp(NEG_BIG - x) is 0 without inf arithmetic.
const float NEG_BIG = -3.0e38;

// The first key query t of batch b sees: its example's start (packed rows) or its window's
// (t - window + 1), whichever is later; 0 for plain causal rows.
uint first_key(uint b, uint t) {
  const uint segment = p.segments != 0 ? t - positions[b * p.T + t] : 0;
  const uint window = p.window != 0 && t >= p.window ? t + 1 - p.window : 0;
  return max(segment, window);
}

void main() {
  const uint t0 = gl_GlobalInvocationID.x * R;  // rows t0 .. t0 + R - 1 (those below T)
  const uint bh = gl_GlobalInvocationID.y;      // b * NH + h
  if (t0 >= p.T || bh >= p.B * p.NH) return;
  const uint b = bh / p.NH, h = bh % p.NH;
  const uint g = h / (p.NH / p.KV);  // the key/value head of query head h
  // Offsets below are in vec4s.
  const uint h4 = HEAD_VEC4S;
  const uint qbase = b * p.T * p.q_stride + p.q_offset + h * H4;  // position 0 of this (b, h)
  const uint kbase = b * p.T * p.k_stride + p.k_offset + g * H4;
  const uint vbase = b * p.T * p.v_stride + p.v_offset + g * H4;
  const uint last = min(t0 + R, p.T) - 1;  // rows past T repeat row T - 1 and are not stored
  // Each row's first key (its example's or its window's start). First keys never decrease along
  // a row, so the key blocks begin at the block holding the first row's: earlier examples' blocks
  // and blocks before every row's window are skipped, not masked. Blocks stay at multiples of
  // BC, so a row's sums do not depend on R.
  uint lo[R];
  [[unroll]] for (uint r = 0; r < R; ++r) lo[r] = first_key(b, min(t0 + r, last));

  const uint lane = gl_LocalInvocationID.x;
  ROW_PRIVATE(q_s)
  ROW_PRIVATE(acc_s)
  float row_max[R];  // running maximum of the scores seen
  float denom[R];    // running sum of exp(score - row_max)
  [[unroll]] for (uint r = 0; r < R; ++r) {
    const uint t = min(t0 + r, last);
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) {
        const uint x = r * H4 + d0 + u;
        ROW(q_s, x) = Q(qbase + t * p.q_stride + d0 + u) * p.scale;  // scores are (q * scale) . k
        ROW(acc_s, x) = vec4(0.0);
      }
    }
    row_max[r] = NEG_BIG;
    denom[r] = 0.0;
  }

  for (uint s0 = lo[0] - lo[0] % BC; s0 <= last; s0 += BC) {
    // Scores of this block; keys past a row (the causal mask) or before its first key (its
    // example's or window's start) get NEG_BIG and weigh exactly 0.
    float sc[R * BC];
    float block_max[R];
    [[unroll]] for (uint r = 0; r < R; ++r) block_max[r] = row_max[r];
    KEY_LOOP for (uint j = 0; j < BC; ++j) {
      const uint ko = kbase + min(s0 + j, last) * p.k_stride;
      SHARED_READ(kj, K, ko)
      [[unroll]] for (uint r = 0; r < R; ++r) {
        float s = 0.0;
        HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
          [[unroll]] for (uint u = 0; u < U; ++u)
            s += dot(ROW(q_s, r * H4 + d0 + u), READ_AT(kj, K, ko, d0 + u));
        }
        sc[r * BC + j] = s0 + j <= t0 + r && s0 + j >= lo[r] ? s : NEG_BIG;
        block_max[r] = max(block_max[r], sc[r * BC + j]);
      }
    }
    // Rescale what was accumulated under the old maximum once per block. A block wholly past a
    // row (its last key block, for the invocation's later rows) leaves it exactly as it was: the
    // selects make that exact even where exp(0) would not round to 1. A block wholly before a
    // row's first key leaves its maximum at NEG_BIG and nothing accumulated, which stays 0.
    [[unroll]] for (uint r = 0; r < R; ++r) {
      const float correction = s0 <= t0 + r ? exp(row_max[r] - block_max[r]) : 1.0;
      denom[r] *= correction;
      HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) ROW(acc_s, r * H4 + d0 + u) *= correction;
      }
    }
    KEY_LOOP for (uint j = 0; j < BC; ++j) {
      const uint vo = vbase + min(s0 + j, last) * p.v_stride;
      SHARED_READ(vj, V, vo)
      [[unroll]] for (uint r = 0; r < R; ++r) {
        const float w =
            s0 + j <= t0 + r && s0 + j >= lo[r] ? exp(sc[r * BC + j] - block_max[r]) : 0.0;
        denom[r] += w;
        HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
          [[unroll]] for (uint u = 0; u < U; ++u) {
            const uint x = r * H4 + d0 + u;
            ROW(acc_s, x) = fma(vec4(w), READ_AT(vj, V, vo, d0 + u), ROW(acc_s, x));
          }
        }
      }
    }
    [[unroll]] for (uint r = 0; r < R; ++r) row_max[r] = block_max[r];
  }

  [[unroll]] for (uint r = 0; r < R; ++r) {
    const uint t = t0 + r;
    if (t >= p.T) break;
    const uint oo = (b * p.T + t) * p.NH * H4 + h * H4;
    const float inv = 1.0 / denom[r];
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) outp[oo + d0 + u] = STORE_ACT4(ROW(acc_s, r * H4 + d0 + u) * inv);
    }
    lse[bh * p.T + t] = row_max[r] + log(denom[r]);
  }
}
