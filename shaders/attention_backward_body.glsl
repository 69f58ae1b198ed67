// Included by attention_backward.comp and attention_backward_texels.comp, which bind the inputs
// dout, q, k, v, out (vec4s) and lse (floats) at bindings 0-5 as storage buffers or texel views
// and define DOUT(i), Q(i), K(i), V(i), OUTP(i) and LSE(i), element i of each. Where the heads lie
// in q, k and v (GPT-2's fused qkv or separate tensors), and in dq, dk and dv alike, is in the
// push constants (attention_params.h).
//
// Causal grouped-query attention backward, flash-style (FlashAttention-2, Dao 2023, Algorithm 2):
// the probabilities are recomputed from q, k and the forward's log-sum-exp,
//   P_ij = exp(scale q_i.k_j - lse_i),  dP_ij = dout_i . v_j,
//   dS_ij = P_ij (dP_ij - D_i)  with  D_i = dout_i . out_i  (= sum_j P_ij dP_ij),
//   dq_i = scale sum_j dS_ij k_j,  dk_j = scale sum_i dS_ij q_i,  dv_j = sum_i P_ij dout_i,
// where a key/value head's dk_j and dv_j also sum over the query heads of its group.
// FlashAttention-2 accumulates dq across key blocks with atomic adds; here instead one dispatch
// has two halves that never write the same element, each a fixed-order loop, so the result is
// deterministic without atomics:
//   z = 0: one invocation per (b, query head h, R query rows i) loops over keys j <= i of h's
//          key/value head (from i - window + 1 with a sliding window) and writes dq_i;
//   z = 1: one invocation per (b, key/value head g, R key rows j) loops over the group's query
//          heads in ascending order and, for each, over queries i >= j (up to j + window - 1
//          with a sliding window), and writes dk_j, dv_j
//          (recomputing D_i on the way, once for the R rows, instead of a workspace).
// No barriers; each invocation's rows are private (in workgroup memory or registers,
// attention_rows.glsl), head rows as vec4s, U per loop iteration where the head loops are loops,
// for llvmpipe (see attention_forward_body.glsl). hs must be a multiple of 4.
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint HS = 64;  // head size D; ids 0-2 are the workgroup size
layout(constant_id = 4) const uint U = 2;    // vec4s per loop iteration; divides HS / 4
layout(constant_id = 5) const uint R = 1;    // rows per invocation; 1 with rows in workgroup memory
const uint H4 = HS / 4;

layout(std430, binding = 6) buffer Dq { vec4 dq[]; };
layout(std430, binding = 7) buffer Dk { vec4 dk[]; };
layout(std430, binding = 8) buffer Dv { vec4 dv[]; };
layout(std430, binding = 9) readonly buffer Positions { uint positions[]; };
layout(push_constant) uniform Push { AttentionParams p; };

// Per-invocation rows (see attention_rows.glsl for where they live): z = 0 uses r0..r2 as q,
// dout_i, dq; z = 1 uses r0..r3 as k, v, dk, dv.
const uint WX = gl_WorkGroupSize.x;
#include "attention_rows.glsl"
ROWS_SHARED(r0)
ROWS_SHARED(r1)
ROWS_SHARED(r2)
ROWS_SHARED(r3)

// Overwrites or adds onto element o of dq, dk or dv.
#define STORE(buf, o, x) buf[o] = p.accumulate != 0 ? buf[o] + (x) : (x)

// Offsets are in vec4s; out and dout rows hold NH heads.
uint head_vec4s() { return HEAD_VEC4S; }

// Rows past T (the last invocation's spare rows) repeat row T - 1 and are not stored.
uint clamp_row(uint i) { return min(i, p.T - 1); }

// Where row i's example starts: 0 unless the rows are packed (attention_params.h).
uint segment_start(uint b, uint i) { return p.segments != 0 ? i - positions[b * p.T + i] : 0; }

// The first key query i sees: its example's start or its window's (i - window + 1), whichever
// is later.
uint first_key(uint b, uint i) {
  const uint window = p.window != 0 && i >= p.window ? i + 1 - p.window : 0;
  return max(segment_start(b, i), window);
}

// dq of query rows i0 .. i0 + R - 1 of head h in batch b. The rows share each key's reads; each
// row's sums run in the order of the one-row kernel, and a key past a row (j > i) adds exactly 0
// there, so the bits do not depend on R.
void dq_rows(uint b, uint h, uint i0, uint lane) {
  const uint h4 = head_vec4s();
  const uint g = h / (p.NH / p.KV);  // the key/value head of query head h
  const uint qbase = b * p.T * p.q_stride + p.q_offset + h * H4;  // position 0 of this (b, h)
  const uint kbase = b * p.T * p.k_stride + p.k_offset + g * H4;
  const uint vbase = b * p.T * p.v_stride + p.v_offset + g * H4;
  const uint O4 = p.NH * H4;
  const uint obase = b * p.T * O4 + h * H4;  // position 0 of this (b, h) in out and dout
  ROW_PRIVATE(r0)
  ROW_PRIVATE(r1)
  ROW_PRIVATE(r2)
  float D[R], L[R];
  uint lo[R];  // each row's first key: keys before it are not visited or add 0
  [[unroll]] for (uint r = 0; r < R; ++r) {
    const uint i = clamp_row(i0 + r);
    lo[r] = first_key(b, i);
    D[r] = 0.0;
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) {
        const uint d = d0 + u, x = r * H4 + d;
        ROW(r0, x) = Q(qbase + i * p.q_stride + d) * p.scale;  // as in the forward: (q * scale) . k
        ROW(r1, x) = DOUT(obase + i * O4 + d);
        D[r] += dot(ROW(r1, x), OUTP(obase + i * O4 + d));
        ROW(r2, x) = vec4(0.0);
      }
    }
    L[r] = LSE((b * p.NH + h) * p.T + i);
  }
  const uint last = clamp_row(i0 + R - 1);
  for (uint j = lo[0]; j <= last; ++j) {
    const uint ko = kbase + j * p.k_stride;
    const uint vo = vbase + j * p.v_stride;
    SHARED_READ(kj, K, ko)
    SHARED_READ(vj, V, vo)
    [[unroll]] for (uint r = 0; r < R; ++r) {
      float s = 0.0;
      float dp = 0.0;
      HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) {
          s += dot(ROW(r0, r * H4 + d0 + u), READ_AT(kj, K, ko, d0 + u));
          dp += dot(ROW(r1, r * H4 + d0 + u), READ_AT(vj, V, vo, d0 + u));
        }
      }
      // A select, not a product: exp(s - L) may overflow for keys past the row.
      const float ds = j <= i0 + r && j >= lo[r] ? exp(s - L[r]) * (dp - D[r]) : 0.0;
      HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) {
          const uint x = r * H4 + d0 + u;
          ROW(r2, x) = fma(vec4(ds), READ_AT(kj, K, ko, d0 + u), ROW(r2, x));
        }
      }
    }
  }
  [[unroll]] for (uint r = 0; r < R; ++r) {
    if (i0 + r >= p.T) break;
    const uint o = qbase + (i0 + r) * p.q_stride;
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u)
        STORE(dq, o + d0 + u, ROW(r2, r * H4 + d0 + u) * p.scale);
    }
  }
}

// dk and dv of key rows j0 .. j0 + R - 1 of key/value head g in batch b: the group's query heads
// in ascending order, each over its queries i >= j, all into the same accumulators (a fixed
// order). The rows share each query's reads and D_i; as in dq_rows, the bits do not depend on R.
void dkv_rows(uint b, uint g, uint j0, uint lane) {
  const uint h4 = head_vec4s();
  const uint group = p.NH / p.KV;
  const uint kbase = b * p.T * p.k_stride + p.k_offset + g * H4;
  const uint vbase = b * p.T * p.v_stride + p.v_offset + g * H4;
  const uint O4 = p.NH * H4;
  ROW_PRIVATE(r0)
  ROW_PRIVATE(r1)
  ROW_PRIVATE(r2)
  ROW_PRIVATE(r3)
  [[unroll]] for (uint r = 0; r < R; ++r) {
    const uint j = clamp_row(j0 + r);
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) {
        const uint d = d0 + u, x = r * H4 + d;
        ROW(r0, x) = K(kbase + j * p.k_stride + d);
        ROW(r1, x) = V(vbase + j * p.v_stride + d);
        ROW(r2, x) = vec4(0.0);
        ROW(r3, x) = vec4(0.0);
      }
    }
  }
  // Queries past the last row's window (i > jmax + window - 1) or after its example see none of
  // these keys: the loops stop there (first keys never decrease along a row), so the blocks past
  // the window cost nothing.
  const uint jmax = clamp_row(j0 + R - 1);
  uint end = p.window != 0 ? min(p.T, jmax + p.window) : p.T;
  if (p.segments != 0)
    for (uint i = jmax + 1; i < end; ++i)
      if (segment_start(b, i) > jmax) {
        end = i;
        break;
      }
  for (uint h = g * group; h < (g + 1) * group; ++h) {
    const uint qbase = b * p.T * p.q_stride + p.q_offset + h * H4;
    const uint obase = b * p.T * O4 + h * H4;
    const uint lbase = (b * p.NH + h) * p.T;
    for (uint i = j0; i < end; ++i) {
      const uint qo = qbase + i * p.q_stride;
      const uint lo = first_key(b, i);  // keys before it are outside its example or window
      const uint go = obase + i * O4;
      SHARED_READ(qi, Q, qo)
      SHARED_READ(gi, DOUT, go)
      float D = 0.0;
      HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u)
          D += dot(READ_AT(gi, DOUT, go, d0 + u), OUTP(go + d0 + u));
      }
      const float L = LSE(lbase + i);
      [[unroll]] for (uint r = 0; r < R; ++r) {
        float s = 0.0;
        float dp = 0.0;
        HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
          [[unroll]] for (uint u = 0; u < U; ++u) {
            const uint d = d0 + u;
            s += dot(READ_AT(qi, Q, qo, d) * p.scale, ROW(r0, r * H4 + d));
            dp += dot(READ_AT(gi, DOUT, go, d), ROW(r1, r * H4 + d));
          }
        }
        // Selects, not products: exp(s - L) may overflow for queries before the row.
        const bool causal = i >= j0 + r && j0 + r >= lo;
        const float P = causal ? exp(s - L) : 0.0;
        const float ds = causal ? P * (dp - D) : 0.0;
        HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
          [[unroll]] for (uint u = 0; u < U; ++u) {
            const uint d = d0 + u, x = r * H4 + d;
            ROW(r3, x) = fma(vec4(P), READ_AT(gi, DOUT, go, d), ROW(r3, x));
            // dk_j = scale sum_i dS_ij q_i
            ROW(r2, x) = fma(vec4(ds), READ_AT(qi, Q, qo, d) * p.scale, ROW(r2, x));
          }
        }
      }
    }
  }
  [[unroll]] for (uint r = 0; r < R; ++r) {
    if (j0 + r >= p.T) break;
    const uint ko = kbase + (j0 + r) * p.k_stride;
    const uint vo = vbase + (j0 + r) * p.v_stride;
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) {
        STORE(dk, ko + d0 + u, ROW(r2, r * H4 + d0 + u));
        STORE(dv, vo + d0 + u, ROW(r3, r * H4 + d0 + u));
      }
    }
  }
}

void main() {
  const uint first = gl_GlobalInvocationID.x * R;  // first query row (z = 0) or key row (z = 1)
  const uint y = gl_GlobalInvocationID.y;          // b * NH + h (z = 0) or b * KV + g (z = 1)
  const uint lane = gl_LocalInvocationID.x;
  if (first >= p.T) return;
  if (gl_WorkGroupID.z == 0) {
    if (y < p.B * p.NH) dq_rows(y / p.NH, y % p.NH, first, lane);
  } else {
    if (y < p.B * p.KV) dkv_rows(y / p.KV, y % p.KV, first, lane);
  }
}
