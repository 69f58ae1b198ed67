#version 450
#extension GL_GOOGLE_include_directive : require
#include "gated_delta_rule_params.h"

// Gated delta rule backward over steps [t0, t1), per column j of each (row, value head) state
// (workgroups: x column blocks, y value heads, z rows). With U = exp(g) S_prev, kv = U^T k,
// delta = beta (v - kv), S = U + k delta^T, o = S^T q, walking t backwards with dS = dL/dS_t:
//   dS += q do^T;  dq = S do;  ddelta = dS^T k;  dv = beta ddelta;  dbeta = ddelta . (v - kv);
//   dkv = -beta ddelta;  dk = dS delta + U dkv;  dU = dS + k dkv^T;  dg = <dU, U>;
//   dS_prev = exp(g) dU, zero where the state was reset before step t.
// dv and dS_in are per column and written here. dq, dk (sums over columns) are summed over the
// workgroup's columns in workgroup memory in column order and written per block; dg and dbeta
// are written per column; gated_delta_rule_reduce.comp finishes all four in a fixed order.
//
// States come from S_in only, never from S_out: a first pass keeps the state before each
// sub-range of `sub` steps in the state workspace, then each sub-range, last first, recomputes
// and keeps its states and walks them backwards.
layout(push_constant) uniform Push { GatedDeltaRuleBackwardParams p; };
#define F p.f
#include "gated_delta_rule_common.glsl"

layout(std430, binding = 7) readonly buffer DO { float d_o[]; };
layout(std430, binding = 8) readonly buffer DSOut { float ds_out[]; };
layout(std430, binding = 9) writeonly buffer DV { float dv_out[]; };
layout(std430, binding = 10) writeonly buffer DSIn { float ds_in[]; };
layout(std430, binding = 11) buffer States { float states[]; };
layout(std430, binding = 12) writeonly buffer Partials { float partials[]; };

// Each column's dq and dk terms, [NC][R4] vec4s: llvmpipe moves workgroup memory one lane at a
// time, so a vec4 per move quarters the cost of the column sums. NC * R4 <= 1024 (16 KiB).
const uint NC = gl_WorkGroupSize.x;  // columns per workgroup
const uint R4 = (2 * DK + 3) / 4;
shared vec4 red[1024];
float terms[4 * R4];  // this column's dq terms, then its dk terms, then zeros

float ds[DK];  // dL/dS for this column
float u[DK];   // the decayed state U of the step being walked back

uint head, j, L;
bool live;  // j < dv; the others add zeros to the column sums

// Slot m of this column in the state workspace ([rows, Hv, subs + sub, dk, dv]).
uint slot_at(uint m) { return ((head * (p.subs + p.sub) + m) * DK) * F.dv + j; }

void store_slot(uint m) {
  if (!live) return;
  const uint base = slot_at(m);
  [[unroll]] for (uint i = 0; i < DK; ++i) states[base + i * F.dv] = s[i];
}

void load_slot(uint m) {
  if (!live) {
    zero_state();
    return;
  }
  const uint base = slot_at(m);
  [[unroll]] for (uint i = 0; i < DK; ++i) s[i] = states[base + i * F.dv];
}

void forward_step(uint r, uint t, uint h) {
  if (resets(r, t)) zero_state();
  const uint gb = gb_at(r, t, h);
  load_k(qk_at(r, t, h));
  const float kv = decay_and_predict(decay(gb));
  write_delta(beta[gb], live ? v[v_at(r, t, h) + j] : 0.0, kv);
}

// Step t backwards; s holds the state before it (after any reset), ds holds dL/dS_t.
void backward_step(uint r, uint t, uint h) {
  const uint gb = gb_at(r, t, h), qk = qk_at(r, t, h), lid = gl_LocalInvocationID.x;
  load_k(qk);
  const float a = decay(gb), b = beta[gb];
  const uint vi = v_at(r, t, h) + j;
  const float vj = live ? v[vi] : 0.0, doj = live ? d_o[gb * F.dv + j] : 0.0;
  const float kv = decay_and_predict(a);
  [[unroll]] for (uint i = 0; i < DK; ++i) u[i] = s[i];
  const float delta = write_delta(b, vj, kv);

  precise float ddelta = 0.0;
  [[unroll]] for (uint i = 0; i < DK; ++i) {
    precise float dsi = fma(q[qk + i], doj, ds[i]), dqi = doj * s[i];
    ds[i] = dsi;
    terms[i] = dqi;
    ddelta = fma(kt[i], dsi, ddelta);
  }
  precise float dkv = -(b * ddelta), dg = 0.0;
  [[unroll]] for (uint i = 0; i < DK; ++i) {
    precise float dki = fma(ds[i], delta, dkv * u[i]);
    precise float du = fma(kt[i], dkv, ds[i]), dprev = a * du;
    terms[DK + i] = dki;
    dg = fma(du, u[i], dg);
    ds[i] = dprev;
  }
  if (resets(r, t)) [[unroll]] for (uint i = 0; i < DK; ++i) ds[i] = 0.0;

  const uint tl = t - F.t0;
  if (live) {
    dv_out[vi] = b * ddelta;
    // Per-column dg, dbeta after the per-block dq, dk: [rows, Hv, L, dv, 2].
    const uint col = F.rows * F.Hv * p.blocks * L * 2 * DK + ((head * L + tl) * F.dv + j) * 2;
    precise float db = ddelta * (vj - kv);
    partials[col] = dg;
    partials[col + 1] = db;
  }
  [[unroll]] for (uint i = 2 * DK; i < 4 * R4; ++i) terms[i] = 0.0;
  [[unroll]] for (uint x = 0; x < R4; ++x)
    red[lid * R4 + x] = vec4(terms[4 * x], terms[4 * x + 1], terms[4 * x + 2], terms[4 * x + 3]);
  barrier();
  // Column sums of the block, columns 0, 1, ... in order: [rows, Hv, blocks, L, 2 DK].
  const uint dst = ((head * p.blocks + gl_WorkGroupID.x) * L + tl) * 2 * DK;
  [[unroll]] for (uint m = 0; m < (R4 + NC - 1) / NC; ++m) {
    const uint x = m * NC + lid;
    if (x < R4) {
      precise vec4 acc = red[x];
      [[unroll]] for (uint c = 1; c < NC; ++c) acc += red[c * R4 + x];
      [[unroll]] for (uint e = 0; e < 4; ++e)
        if (4 * x + e < 2 * DK) partials[dst + 4 * x + e] = acc[e];
    }
  }
  barrier();
}

void main() {
  const uint h = gl_WorkGroupID.y, r = gl_WorkGroupID.z;
  head = r * F.Hv + h;
  j = gl_GlobalInvocationID.x;
  live = j < F.dv;
  L = F.t1 - F.t0;
  const uint sbase = head * DK * F.dv + j;

  [[unroll]] for (uint i = 0; i < DK; ++i) s[i] = live && F.has_s_in != 0 ? s_in[sbase + i * F.dv] : 0.0;
  for (uint b = 0; b < p.subs; ++b) {
    store_slot(b);
    const uint ts = F.t0 + b * p.sub, te = min(ts + p.sub, F.t1);
    for (uint t = ts; t < te; ++t) forward_step(r, t, h);
  }

  [[unroll]] for (uint i = 0; i < DK; ++i) ds[i] = live && p.has_ds_out != 0 ? ds_out[sbase + i * F.dv] : 0.0;
  for (uint b = p.subs; b-- > 0;) {
    const uint ts = F.t0 + b * p.sub, te = min(ts + p.sub, F.t1);
    load_slot(b);
    for (uint t = ts; t < te; ++t) {
      if (resets(r, t)) zero_state();
      store_slot(p.subs + t - ts);
      forward_step(r, t, h);
    }
    for (uint t = te; t-- > ts;) {
      load_slot(p.subs + t - ts);
      backward_step(r, t, h);
    }
  }
  if (live && p.has_ds_in != 0)
    [[unroll]] for (uint i = 0; i < DK; ++i) ds_in[sbase + i * F.dv] = ds[i];
}
