// Included by gated_delta_rule_{forward,backward}_body.glsl, which declare the push block and
// `#define F` to its GatedDeltaRuleParams (bindings 0-6 are the same in both).
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
// DK is a specialization constant. With HEAD_BLOCKS (the *_blocks.comp kernels) each loop over it
// runs DK / UNROLL blocks of UNROLL unrolled elements; without, every loop over it is unrolled and
// the state can live in registers, which GPUs want. CPU drivers take minutes to compile the
// unrolled dk-128 pipelines (about 1 on Mesa 22.3's llvmpipe, 6 on Mesa 25's) and get the blocks.
// llvmpipe stops all loops of an invocation after 65535 iterations in total
// (DeviceQuirks::max_loop_iterations): unrolled, only the loops over time count against it; in
// blocks, every block does, and the host counts them (gated_delta_rule.cpp) and picks the
// unrolled kernel for ranges too long for the blocks. Only the element loops are blocked: each
// sum still runs i = 0, 1, ..., DK - 1 with the same operations, so the bits are the same.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint DK = 128;  // key head size; ids 0-2 are the workgroup size
#ifdef HEAD_BLOCKS
layout(constant_id = 4) const uint UNROLL = 16;  // elements per unrolled block, a divisor of DK
// for (i = 0; i < DK; ++i) in blocks: the outer loop stays a loop, the inner one has a constant
// trip count and is unrolled.
#define HEAD_LOOP(i)                                             \
  [[dont_unroll]] for (uint blk_ = 0; blk_ < DK; blk_ += UNROLL) \
    [[unroll]] for (uint u_ = 0, i = blk_; u_ < UNROLL; ++u_, ++i)
// HEAD_VEC4: element i of a HEAD_LOOP sits at a constant place HEAD_LANE4(i) = i % 4 of a vec4
// once unrolled (blk_ a multiple of 4). A spec-constant expression in uint arithmetic: glslang
// emitted undefined ids for a bool one.
#define HEAD_LANE4(i) (u_ & 3u)
const uint HEAD_REM4_ = DK % 4 + UNROLL % 4;
#define HEAD_VEC4 (HEAD_REM4_ == 0u)
#else
#define HEAD_LOOP(i) [[unroll]] for (uint i = 0; i < DK; ++i)
// Unrolled, the arrays live in registers: nothing to gain, so GPUs keep their form.
#define HEAD_LANE4(i) (i & 3u)
#define HEAD_VEC4 false
#endif

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer G { float g[]; };
layout(std430, binding = 4) readonly buffer Beta { float beta[]; };
layout(std430, binding = 5) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 6) readonly buffer SIn { float s_in[]; };

float s[DK];   // this invocation's column of the state
float kt[DK];  // k_t, read once per step

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

float decay(uint gb) {
  precise float a = exp(g[gb]);
  return a;
}

// The per-element arithmetic of a step, on values: the loops read and write each array element
// once (in blocks an array access is a gather or scatter on llvmpipe).
// s_i of the decayed state, a s_i (si is 0 where the state restarts).
float decayed(float a, float si) {
  precise float d = a * si;
  return d;
}

// kv + k_i d_i: the decayed state's prediction of v_j, summed i = 0, 1, ... by the callers' loops.
float predict(float ki, float di, float kv) {
  precise float sum = fma(ki, di, kv);
  return sum;
}

// The delta rule's write: delta = beta (v_j - kv), then s_i += k_i delta element by element.
float delta_of(float b, float vj, float kv) {
  precise float delta = b * (vj - kv);
  return delta;
}

float written(float ki, float delta, float di) {
  precise float w = fma(ki, delta, di);
  return w;
}
