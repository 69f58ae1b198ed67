// Included by attention_backward.comp and attention_backward_texels.comp, which bind the inputs
// dout, qkv, out (vec4s) and lse (floats) at bindings 0-3 as storage buffers or texel views and
// define DOUT(i), QKV(i), OUTP(i) and LSE(i), element i of each.
//
// Causal multi-head attention backward, flash-style (FlashAttention-2, Dao 2023, Algorithm 2):
// the probabilities are recomputed from q, k and the forward's log-sum-exp,
//   P_ij = exp(scale q_i.k_j - lse_i),  dP_ij = dout_i . v_j,
//   dS_ij = P_ij (dP_ij - D_i)  with  D_i = dout_i . out_i  (= sum_j P_ij dP_ij),
//   dq_i = scale sum_j dS_ij k_j,  dk_j = scale sum_i dS_ij q_i,  dv_j = sum_i P_ij dout_i.
// FlashAttention-2 accumulates dq across key blocks with atomic adds; here instead one dispatch
// has two halves that never write the same element, each a fixed-order loop, so the result is
// deterministic without atomics:
//   z = 0: one invocation per (b, h, query row i) loops over keys j <= i and writes dq_i;
//   z = 1: one invocation per (b, h, key row j) loops over queries i >= j and writes dk_j, dv_j
//          (recomputing D_i on the way: one extra dot product per pair instead of a workspace).
// No barriers; each invocation's rows are private (in workgroup memory), head rows as vec4s, U
// per loop iteration, for llvmpipe (see attention_forward.comp). hs must be a multiple of 4.
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint HS = 64;  // head size C / NH; ids 0-2 are the workgroup size
layout(constant_id = 4) const uint U = 2;    // vec4s per loop iteration; divides HS / 4
const uint H4 = HS / 4;

layout(std430, binding = 4) buffer Dqkv { vec4 dqkv[]; };
layout(push_constant) uniform Push { AttentionParams p; };

// Per-invocation rows in workgroup memory, vec4 d at [d * WX + lane] (see attention_forward.comp):
// z = 0 uses r0..r2 as q, dout_i, dq; z = 1 uses r0..r3 as k, v, dk, dv.
const uint WX = gl_WorkGroupSize.x;
shared vec4 r0[H4 * WX];
shared vec4 r1[H4 * WX];
shared vec4 r2[H4 * WX];
shared vec4 r3[H4 * WX];

void store(uint o, vec4 x) { dqkv[o] = p.accumulate != 0 ? dqkv[o] + x : x; }

void main() {
  const uint r = gl_GlobalInvocationID.x;   // query row (z = 0) or key row (z = 1)
  const uint bh = gl_GlobalInvocationID.y;  // b * NH + h
  const uint lane = gl_LocalInvocationID.x;
  if (r >= p.T || bh >= p.B * p.NH) return;
  const uint b = bh / p.NH, h = bh % p.NH;
  const uint C4 = p.C / 4;                    // offsets below are in vec4s
  // Head loops run to this push-constant bound (equal to H4) rather than to the specialization
  // constant: with a known trip count the compiler unrolls them completely, and llvmpipe then
  // spends minutes compiling one pipeline.
  const uint h4 = min(p.C / p.NH / 4, H4);
  const uint row3 = 3 * C4;
  const uint base = b * p.T * row3 + h * H4;  // q of position 0 of this (b, h) in qkv
  const uint obase = b * p.T * C4 + h * H4;   // position 0 of this (b, h) in out and dout

  if (gl_WorkGroupID.z == 0) {
    const uint i = r;
    float D = 0.0;
    for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) {
        const uint d = d0 + u;
        r0[(d) * WX + lane] = QKV(base + i * row3 + d) * p.scale;  // as in the forward: (q * scale) . k
        r1[(d) * WX + lane] = DOUT(obase + i * C4 + d);
        D += dot(r1[(d) * WX + lane], OUTP(obase + i * C4 + d));
        r2[(d) * WX + lane] = vec4(0.0);
      }
    }
    const float L = LSE(bh * p.T + i);
    for (uint j = 0; j <= i; ++j) {
      const uint ko = base + j * row3 + C4;
      const uint vo = ko + C4;
      float s = 0.0;
      float dp = 0.0;
      for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) {
          s += dot(r0[(d0 + u) * WX + lane], QKV(ko + d0 + u));
          dp += dot(r1[(d0 + u) * WX + lane], QKV(vo + d0 + u));
        }
      }
      const float ds = exp(s - L) * (dp - D);
      for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u)
          r2[(d0 + u) * WX + lane] = fma(vec4(ds), QKV(ko + d0 + u), r2[(d0 + u) * WX + lane]);
      }
    }
    const uint o = base + i * row3;
    for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) store(o + d0 + u, r2[(d0 + u) * WX + lane] * p.scale);
    }
  } else {
    const uint j = r;
    for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) {
        const uint d = d0 + u;
        r0[(d) * WX + lane] = QKV(base + j * row3 + C4 + d);
        r1[(d) * WX + lane] = QKV(base + j * row3 + 2 * C4 + d);
        r2[(d) * WX + lane] = vec4(0.0);
        r3[(d) * WX + lane] = vec4(0.0);
      }
    }
    for (uint i = j; i < p.T; ++i) {
      const uint qo = base + i * row3;
      const uint go = obase + i * C4;
      float s = 0.0;
      float dp = 0.0;
      float D = 0.0;
      for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) {
          const uint d = d0 + u;
          s += dot(QKV(qo + d) * p.scale, r0[(d) * WX + lane]);
          const vec4 gd = DOUT(go + d);
          dp += dot(gd, r1[(d) * WX + lane]);
          D += dot(gd, OUTP(go + d));
        }
      }
      const float P = exp(s - LSE(bh * p.T + i));
      const float ds = P * (dp - D);
      for (uint d0 = 0; d0 < h4; d0 += U) {
        [[unroll]] for (uint u = 0; u < U; ++u) {
          const uint d = d0 + u;
          r3[(d) * WX + lane] = fma(vec4(P), DOUT(go + d), r3[(d) * WX + lane]);
          r2[(d) * WX + lane] = fma(vec4(ds), QKV(qo + d) * p.scale, r2[(d) * WX + lane]);  // dk_j = scale sum_i dS_ij q_i
        }
      }
    }
    const uint o = base + j * row3;
    for (uint d0 = 0; d0 < h4; d0 += U) {
      [[unroll]] for (uint u = 0; u < U; ++u) {
        store(o + C4 + d0 + u, r2[(d0 + u) * WX + lane]);
        store(o + 2 * C4 + d0 + u, r3[(d0 + u) * WX + lane]);
      }
    }
  }
}
