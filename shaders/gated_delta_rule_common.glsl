// Included by gated_delta_rule_forward.comp and gated_delta_rule_backward.comp, which declare the
// push block and `#define F` to its GatedDeltaRuleParams (bindings 0-6 are the same in both).
//
// One invocation owns one column j of one (row, value head) state: the dv columns of S evolve
// independently (S[:, j] is a dk-vector recurrence), so the forward needs no barrier and each
// column's dot products are serial in i, in one fixed order.
//
// The arithmetic of a step lives here once and every result is `precise` (SPIR-V NoContraction:
// no fusing or reordering by the compiler; the arrays themselves cannot be, glslang then emits
// invalid SPIR-V), so the backward's recomputed states are bit for bit the forward's
// and a sequence run in chunks gives the bits of one whole-range run.
//
// DK is a specialization constant and every loop over it is unrolled: llvmpipe stops all loops of
// an invocation after 65535 iterations in total (DeviceQuirks::max_loop_iterations), so only the
// loops over time count against it, and the state can live in registers.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint DK = 128;  // key head size; ids 0-2 are the workgroup size

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer G { float g[]; };
layout(std430, binding = 4) readonly buffer Beta { float beta[]; };
layout(std430, binding = 5) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 6) readonly buffer SIn { float s_in[]; };

float s[DK];   // this invocation's column of the state
float kt[DK];         // k_t, read once per step

// A new example starts at t: the state before it is zero.
bool resets(uint r, uint t) {
  return F.has_positions != 0 && positions[r * F.T + t] == 0;
}

// Index of (r, t, head h) in [rows, T, Hv] (times dv for o).
uint gb_at(uint r, uint t, uint h) { return (r * F.T + t) * F.Hv + h; }
// Index of v's (and dv's) first element for (r, t, head h), in its possibly wider tensor.
uint v_at(uint r, uint t, uint h) { return (r * F.T + t) * F.v_stride + F.v_offset + h * F.dv; }
// Index of k_t's and q_t's first element for value head h.
uint qk_at(uint r, uint t, uint h) { return ((r * F.T + t) * F.Hk + h / (F.Hv / F.Hk)) * DK; }

void zero_state() {
  [[unroll]] for (uint i = 0; i < DK; ++i) s[i] = 0.0;
}

void load_k(uint base) {
  [[unroll]] for (uint i = 0; i < DK; ++i) kt[i] = k[base + i];
}

float decay(uint gb) {
  precise float a = exp(g[gb]);
  return a;
}

// s = a s, returning kv = k . s (the decayed state's prediction of v_j), summed i = 0, 1, ...
float decay_and_predict(float a) {
  precise float kv = 0.0;
  [[unroll]] for (uint i = 0; i < DK; ++i) {
    precise float decayed = a * s[i];
    s[i] = decayed;
    kv = fma(kt[i], decayed, kv);
  }
  return kv;
}

// The delta rule's write: s += k delta, delta = beta (v_j - kv). Returns delta.
float write_delta(float b, float vj, float kv) {
  precise float delta = b * (vj - kv);
  [[unroll]] for (uint i = 0; i < DK; ++i) {
    precise float written = fma(kt[i], delta, s[i]);
    s[i] = written;
  }
  return delta;
}
