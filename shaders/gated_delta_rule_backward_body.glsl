// Included by gated_delta_rule_backward.comp (head loops fully unrolled) and
// gated_delta_rule_backward_blocks.comp (in blocks; gated_delta_rule_common.glsl says why).
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
// and keeps its states and walks them backwards. Every pass over the head is software-pipelined
// (one loop finishes a step and starts the next, element by element), with each element's
// operations and each sum's order those of the step-by-step form: the bits do not change.
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
float terms[4 * R4];  // this column's dq terms, then its dk terms, then zeros (!HEAD_VEC4)

// With HEAD_VEC4 the walk's loops put the terms in red themselves, four at a time from registers:
// in blocks, terms[i] is a scatter per element on llvmpipe, and the walk wrote two per element per
// step (docs/benchmarks-speed.md). red ends up holding the same values in the same places.
vec4 dq4, dk4;
uint rbase;  // this column's first vec4 in red
#define PUT_DQ(i, val)                                 \
  if (HEAD_VEC4) {                                     \
    dq4[HEAD_LANE4(i)] = val;                          \
    if (HEAD_LANE4(i) == 3u) red[rbase + i / 4] = dq4; \
  } else {                                             \
    terms[i] = val;                                    \
  }
#define PUT_DK(i, val)                                          \
  if (HEAD_VEC4) {                                              \
    dk4[HEAD_LANE4(i)] = val;                                   \
    if (HEAD_LANE4(i) == 3u) red[rbase + DK / 4 + i / 4] = dk4; \
  } else {                                                      \
    terms[DK + i] = val;                                        \
  }

float ds[DK];  // dL/dS for this column
float u[DK];   // the decayed state U of the step being walked back

uint head, j, L;
bool live;  // j < dv; the others add zeros to the column sums
uint r, h;  // row and value head

// Slot m of this column in the state workspace ([rows, Hv, subs + sub, dk, dv]).
uint slot_at(uint m) { return ((head * (p.subs + p.sub) + m) * DK) * F.dv + j; }
float slot_value(uint base, uint i) { return live ? states[base + i * F.dv] : 0.0; }

// The step a forward pass starts: its k, decay and reset; with `store`, the state before it
// (after any reset) goes to the slot at `base`.
uint qk;
float a;
bool reset, store;
uint base;

void begin_step(uint t, bool keep, uint m) {
  qk = qk_at(r, t, h);
  a = decay(gb_at(r, t, h));
  reset = resets(r, t);
  store = keep && live;
  base = store ? slot_at(m) : 0;
}

// Element i of the started step from `prev`, the state before it: the reset, the kept slot, the
// decay into s, k_t into kt and the prediction kv.
#define START_STEP(prev)                                              \
  {                                                                   \
    const float si_ = reset ? 0.0 : prev;                             \
    if (store) states[base + i * F.dv] = si_;                         \
    const float ki = k[qk + i], di = decayed(a, si_);                 \
    kt[i] = ki;                                                       \
    s[i] = di;                                                        \
    kv = predict(ki, di, kv);                                         \
  }

// delta of the started step t, its prediction kv summed.
float step_delta(uint t, float kv) {
  const uint gb = gb_at(r, t, h);
  return delta_of(beta[gb], live ? v[v_at(r, t, h) + j] : 0.0, kv);
}

// The forward recurrence over [t0, t1), software-pipelined: one head loop finishes step t (the
// write) and starts step t + 1, element by element, with the operations of the two-pass form in
// the same order. s holds the state before t0 and ends holding step t1 - 1 started, not finished.
// With `keep`, the state before each step (after any reset) goes to slot subs + t - t0; else the
// state before each sub-range start after t0 (before any reset) goes to its slot. Returns the
// last step's kv.
float forward_range(uint t0, uint t1, bool keep) {
  begin_step(t0, keep, p.subs);
  precise float kv = 0.0;
  HEAD_LOOP(i) START_STEP(s[i])
  for (uint t = t0; t + 1 < t1; ++t) {
    const float delta = step_delta(t, kv);
    begin_step(t + 1, keep, p.subs + t + 1 - t0);
    kv = 0.0;
    const bool boundary = !keep && live && (t + 1 - F.t0) % p.sub == 0;
    const uint sb = boundary ? slot_at((t + 1 - F.t0) / p.sub) : 0;
    HEAD_LOOP(i) {
      const float si = written(kt[i], delta, s[i]);
      if (boundary) states[sb + i * F.dv] = si;
      START_STEP(si)
    }
  }
  return kv;
}

// Walking step t back: the decayed state U of step t from its slot into u, k_t into kt, and kv.
uint wqk, wgb;
float wa;
bool wreset;
void begin_walk(uint t, uint m) {
  wgb = gb_at(r, t, h);
  wqk = qk_at(r, t, h);
  wa = decay(wgb);
  wreset = resets(r, t);
  base = live ? slot_at(m) : 0;
}

#define WALK_START                                          \
  {                                                         \
    const float ki = k[wqk + i], di = decayed(wa, slot_value(base, i)); \
    kt[i] = ki;                                             \
    u[i] = di;                                              \
    kv = predict(ki, di, kv);                               \
  }

// Step t's last pass, element i: dk's term, dU, dg and dS before the step (zero at a reset).
#define WALK_FINISH                                     \
  {                                                     \
    const float dsi = ds[i], ui = u[i];                 \
    precise float dki = fma(dsi, delta, dkv * ui);      \
    precise float du = fma(kt[i], dkv, dsi), dprev = fa * du; \
    PUT_DK(i, dki)                                      \
    dg = fma(du, ui, dg);                               \
    ds[i] = freset ? 0.0 : dprev;                       \
  }

// The column sums of step t's dq and dk terms, and its per-column dv, dg, dbeta.
void finish_step(uint t, uint gb, uint vi, float b, float ddelta, float dg, float db) {
  const uint tl = t - F.t0, lid = gl_LocalInvocationID.x;
  if (live) {
    dv_out[vi] = b * ddelta;
    // Per-column dg, dbeta after the per-block dq, dk: [rows, Hv, L, dv, 2].
    const uint col = F.rows * F.Hv * p.blocks * L * 2 * DK + ((head * L + tl) * F.dv + j) * 2;
    partials[col] = dg;
    partials[col + 1] = db;
  }
  // 2 DK is even: at most two zeros pad the last vec4. Not a loop: llvmpipe would count one with
  // no iterations against its limit.
  if (!HEAD_VEC4) {
    if (4 * R4 > 2 * DK) terms[2 * DK] = terms[2 * DK + 1] = 0.0;
    [[unroll]] for (uint x = 0; x < R4; ++x)
      red[lid * R4 + x] = vec4(terms[4 * x], terms[4 * x + 1], terms[4 * x + 2], terms[4 * x + 3]);
  }
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

// Walks the sub-range [ts, te) back, its states in slots subs + t - ts; ds holds dL/dS_{te-1}.
// Two head loops a step: the second finishes step t and starts step t - 1.
void walk_range(uint ts, uint te) {
  begin_walk(te - 1, p.subs + te - 1 - ts);
  precise float kv = 0.0;
  HEAD_LOOP(i) WALK_START
  for (uint t = te; t-- > ts;) {
    const uint gb = wgb, qt = wqk, vi = v_at(r, t, h) + j;
    const float fa = wa, b = beta[gb];
    const bool freset = wreset;
    const float vj = live ? v[vi] : 0.0, doj = live ? d_o[gb * F.dv + j] : 0.0;
    const float delta = delta_of(b, vj, kv);
    precise float ddelta = 0.0;
    HEAD_LOOP(i) {
      const float ki = kt[i], si = written(ki, delta, u[i]);
      precise float dsi = fma(q[qt + i], doj, ds[i]), dqi = doj * si;
      ds[i] = dsi;
      PUT_DQ(i, dqi)
      ddelta = fma(ki, dsi, ddelta);
    }
    precise float dkv = -(b * ddelta), dg = 0.0, db = ddelta * (vj - kv);
    if (t > ts) {
      begin_walk(t - 1, p.subs + t - 1 - ts);
      kv = 0.0;
      HEAD_LOOP(i) {
        WALK_FINISH
        WALK_START
      }
    } else {
      HEAD_LOOP(i) WALK_FINISH
    }
    finish_step(t, gb, vi, b, ddelta, dg, db);
  }
}

// Loops as the host counts them for llvmpipe's limit (gated_delta_rule.cpp): six head loops outside
// the steps; per sub-range its loop and three head loops; per step three time loops, one head
// loop in each forward pass and two walking back (and the walk's if/else branch not taken).
void main() {
  h = gl_WorkGroupID.y;
  r = gl_WorkGroupID.z;
  head = r * F.Hv + h;
  j = gl_GlobalInvocationID.x;
  live = j < F.dv;
  L = F.t1 - F.t0;
  rbase = gl_LocalInvocationID.x * R4;
  const uint sbase = head * DK * F.dv + j;

  // The state before each sub-range, from S_in: the steps before the last sub-range's start.
  HEAD_LOOP(i) s[i] = live && F.has_s_in != 0 ? s_in[sbase + i * F.dv] : 0.0;
  if (live) {
    const uint b0 = slot_at(0);
    HEAD_LOOP(i) states[b0 + i * F.dv] = s[i];
  }
  const uint last = F.t0 + (p.subs - 1) * p.sub;
  if (last > F.t0) {
    const float kv = forward_range(F.t0, last, false);
    // Finish the step before the last sub-range and keep the state after it.
    const float delta = step_delta(last - 1, kv);
    const uint sb = live ? slot_at(p.subs - 1) : 0;
    HEAD_LOOP(i) {
      const float si = written(kt[i], delta, s[i]);
      if (live) states[sb + i * F.dv] = si;
    }
  }

  HEAD_LOOP(i) ds[i] = live && p.has_ds_out != 0 ? ds_out[sbase + i * F.dv] : 0.0;
  for (uint b = p.subs; b-- > 0;) {
    const uint ts = F.t0 + b * p.sub, te = min(ts + p.sub, F.t1);
    const uint sb = live ? slot_at(b) : 0;
    HEAD_LOOP(i) s[i] = slot_value(sb, i);
    forward_range(ts, te, true);
    walk_range(ts, te);
  }
  if (live && p.has_ds_in != 0) HEAD_LOOP(i) ds_in[sbase + i * F.dv] = ds[i];
}
