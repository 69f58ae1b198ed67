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
//   z = 0: one invocation per (b, query head h, query row i) loops over keys j <= i of h's
//          key/value head and writes dq_i;
//   z = 1: one invocation per (b, key/value head g, key row j) loops over the group's query heads
//          in ascending order and, for each, over queries i >= j, and writes dk_j, dv_j
//          (recomputing D_i on the way: one extra dot product per pair instead of a workspace).
// No barriers; each invocation's rows are private (in workgroup memory), head rows as vec4s, U
// per loop iteration, for llvmpipe (see attention_forward_body.glsl). hs must be a multiple of 4.
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint HS = 64;  // head size D; ids 0-2 are the workgroup size
layout(constant_id = 4) const uint U = 2;    // vec4s per loop iteration; divides HS / 4
const uint H4 = HS / 4;

layout(std430, binding = 6) buffer Dq { vec4 dq[]; };
layout(std430, binding = 7) buffer Dk { vec4 dk[]; };
layout(std430, binding = 8) buffer Dv { vec4 dv[]; };
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

// dq of query row i of head h in batch b.
void dq_row(uint b, uint h, uint i, uint lane) {
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
  float D = 0.0;
  HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
    [[unroll]] for (uint u = 0; u < U; ++u) {
      const uint d = d0 + u;
      ROW(r0, d) = Q(qbase + i * p.q_stride + d) * p.scale;  // as in the forward: (q * scale) . k
      ROW(r1, d) = DOUT(obase + i * O4 + d);
      D += dot(ROW(r1, d), OUTP(obase + i * O4 + d));
      ROW(r2, d) = vec4(0.0);
    }
  }
  const float L = LSE((b * p.NH + h) * p.T + i);
  for (uint j = 0; j <= i; ++j) {
    const uint ko = kbase + j * p.k_stride;
    const uint vo = vbase + j * p.v_stride;
    float s = 0.0;
    float dp = 0.0;
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) {
        s += dot(ROW(r0, d0 + u), K(ko + d0 + u));
        dp += dot(ROW(r1, d0 + u), V(vo + d0 + u));
      }
    }
    const float ds = exp(s - L) * (dp - D);
    HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u)
        ROW(r2, d0 + u) = fma(vec4(ds), K(ko + d0 + u), ROW(r2, d0 + u));
    }
  }
  const uint o = qbase + i * p.q_stride;
  HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
    [[unroll]] for (uint u = 0; u < U; ++u) STORE(dq, o + d0 + u, ROW(r2, d0 + u) * p.scale);
  }
}

// dk and dv of key row j of key/value head g in batch b: the group's query heads in ascending
// order, each over its queries i >= j, all into the same accumulators (a fixed order).
void dkv_row(uint b, uint g, uint j, uint lane) {
  const uint h4 = head_vec4s();
  const uint group = p.NH / p.KV;
  const uint ko = b * p.T * p.k_stride + p.k_offset + g * H4 + j * p.k_stride;
  const uint vo = b * p.T * p.v_stride + p.v_offset + g * H4 + j * p.v_stride;
  const uint O4 = p.NH * H4;
  ROW_PRIVATE(r0)
  ROW_PRIVATE(r1)
  ROW_PRIVATE(r2)
  ROW_PRIVATE(r3)
  HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
    [[unroll]] for (uint u = 0; u < U; ++u) {
      const uint d = d0 + u;
      ROW(r0, d) = K(ko + d);
      ROW(r1, d) = V(vo + d);
      ROW(r2, d) = vec4(0.0);
      ROW(r3, d) = vec4(0.0);
    }
  }
  for (uint h = g * group; h < (g + 1) * group; ++h) {
    const uint qbase = b * p.T * p.q_stride + p.q_offset + h * H4;
    const uint obase = b * p.T * O4 + h * H4;
    const uint lbase = (b * p.NH + h) * p.T;
    for (uint i = j; i < p.T; ++i) {
      const uint qo = qbase + i * p.q_stride;
      const uint go = obase + i * O4;
      float s = 0.0;
      float dp = 0.0;
      float D = 0.0;
      HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) {
          const uint d = d0 + u;
          s += dot(Q(qo + d) * p.scale, ROW(r0, d));
          const vec4 gd = DOUT(go + d);
          dp += dot(gd, ROW(r1, d));
          D += dot(gd, OUTP(go + d));
        }
      }
      const float P = exp(s - LSE(lbase + i));
      const float ds = P * (dp - D);
      HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) {
          const uint d = d0 + u;
          ROW(r3, d) = fma(vec4(P), DOUT(go + d), ROW(r3, d));
          ROW(r2, d) = fma(vec4(ds), Q(qo + d) * p.scale, ROW(r2, d));  // dk_j = scale sum_i dS_ij q_i
        }
      }
    }
  }
  HEAD_LOOP for (uint d0 = 0; d0 < h4; d0 += U) {
    [[unroll]] for (uint u = 0; u < U; ++u) {
      STORE(dk, ko + d0 + u, ROW(r2, d0 + u));
      STORE(dv, vo + d0 + u, ROW(r3, d0 + u));
    }
  }
}

void main() {
  const uint r = gl_GlobalInvocationID.x;   // query row (z = 0) or key row (z = 1)
  const uint y = gl_GlobalInvocationID.y;   // b * NH + h (z = 0) or b * KV + g (z = 1)
  const uint lane = gl_LocalInvocationID.x;
  if (r >= p.T) return;
  if (gl_WorkGroupID.z == 0) {
    if (y < p.B * p.NH) dq_row(y / p.NH, y % p.NH, r, lane);
  } else {
    if (y < p.B * p.KV) dkv_row(y / p.KV, y % p.KV, r, lane);
  }
}
