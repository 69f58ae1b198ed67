// Included by the gated delta rule's chunkwise (WY) kernels (gated_delta_rule_wy_*.comp), which
// declare the push block (GatedDeltaRuleWyParams p) and `#define F` to its GatedDeltaRuleParams.
//
// The steps run in blocks of CHUNK tokens at fixed multiples of CHUNK from t = 0 (a call's t0 is
// one, its t1 one or T), so a block's arithmetic is the same whatever range a call runs. Per
// (row, value head, block) the workspace holds what the block needs of the state-independent
// part (tests/reference/gated_delta_rule_chunked.h has the mathematics), each [CHUNK, ...] with
// zero rows past the block's last token:
//   A [CHUNK, CHUNK]   beta_i Gamma_ij (k_i . k_j), j < i in i's example
//   M [CHUNK, CHUNK]   Gamma_ij (q_i . k_j), j <= i in i's example
//   W [CHUNK, DK4]     (I + A)^-1 diag(beta z e^G) K
//   Kd [CHUNK, DK4]    Gamma_{last, j} k_j, j in the last token's example
//   Qz [CHUNK, DK4]    z_i e^{G_i} q_i: how S0 reaches o_i (0 past a restart)
//   Ut [CHUNK, DV4]    (I + A)^-1 diag(beta) V
//   ze [CHUNK]         z_i e^{G_i}
//   Kr, Qr [CHUNK, DK4] k_i and q_i as they are (the backward's vec4 reads)
// DK4 and DV4 are dk and dv rounded up to 4, the padding zero, so the serial pass reads vec4s.
// Every result is `precise` (no contraction or reordering by the compiler) and every sum runs its
// terms in one fixed order, so a block's bits never depend on the call or the device's unroll.
//
// Head loops run DK / UNROLL blocks of UNROLL unrolled elements, block loops CHUNK / CUNROLL
// blocks: llvmpipe counts every loop iteration of an invocation against its limit
// (DeviceQuirks::max_loop_iterations), and the host counts them (gated_delta_rule_wy.cpp).
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint DK = 128;     // key head size
layout(constant_id = 4) const uint CHUNK = 64;   // tokens per block
layout(constant_id = 5) const uint UNROLL = 8;   // a divisor of DK
const uint CUNROLL = 8;                          // a divisor of CHUNK

#define HEAD_LOOP(i)                                             \
  [[dont_unroll]] for (uint blk_ = 0; blk_ < DK; blk_ += UNROLL) \
    [[unroll]] for (uint u_ = 0, i = blk_; u_ < UNROLL; ++u_, ++i)
// for (j = 0; j < n; ++j), n a multiple of CUNROLL.
#define BLOCK_LOOP(j, n)                                           \
  [[dont_unroll]] for (uint cblk_ = 0; cblk_ < (n); cblk_ += CUNROLL) \
    [[unroll]] for (uint cu_ = 0, j = cblk_; cu_ < CUNROLL; ++cu_, ++j)

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer G { float g[]; };
layout(std430, binding = 4) readonly buffer Beta { float beta[]; };
layout(std430, binding = 5) readonly buffer Positions { uint positions[]; };
layout(std430, binding = 6) readonly buffer SIn { float s_in[]; };

bool resets(uint r, uint t) { return F.has_positions != 0 && positions[r * F.T + t] == 0; }
uint gb_at(uint r, uint t, uint h) { return (r * F.T + t) * F.Hv + h; }
uint v_at(uint r, uint t, uint h) { return (r * F.T + t) * F.v_stride + F.v_offset + h * F.dv; }
uint qk_at(uint r, uint t, uint h) { return ((r * F.T + t) * F.Hk + h / (F.Hv / F.Hk)) * DK; }

// e^x for a decay (x <= 0), taken as zero below e^-40 (4.2e-18): CPUs (llvmpipe) run float
// denormals (below 1.2e-38) tens of times slower, and a block of 64 tokens of Qwen3.5's decays
// reaches them; products of two such decays stay above them. A term so small is 10 orders of
// magnitude below float32's rounding of the O(1) terms it is added to.
float decay_exp(float x) { return x < -40.0 ? 0.0 : exp(x); }

// The workspace: per (row, value head, block of the call's range) the parts above, in that order.
// Every part starts on a multiple of 4 floats.
const uint DK4 = (DK + 3) / 4 * 4;
uint dv4() { return (F.dv + 3) / 4 * 4; }
uint blocks_in_range() { return (F.t1 - F.t0 + CHUNK - 1) / CHUNK; }
uint block_floats() { return CHUNK * (2 * CHUNK + 5 * DK4 + dv4()) + CHUNK; }
uint block_base(uint r, uint h, uint b) { return ((r * F.Hv + h) * blocks_in_range() + b) * block_floats(); }
uint a_at(uint wb) { return wb; }
uint m_at(uint wb) { return wb + CHUNK * CHUNK; }
uint w_at(uint wb) { return wb + 2 * CHUNK * CHUNK; }
uint kd_at(uint wb) { return wb + 2 * CHUNK * CHUNK + CHUNK * DK4; }
uint qz_at(uint wb) { return wb + 2 * CHUNK * CHUNK + 2 * CHUNK * DK4; }
uint ut_at(uint wb) { return wb + 2 * CHUNK * CHUNK + 3 * CHUNK * DK4; }
uint ze_at(uint wb) { return wb + 2 * CHUNK * CHUNK + 3 * CHUNK * DK4 + CHUNK * dv4(); }
uint kr_at(uint wb) { return ze_at(wb) + CHUNK; }
uint qr_at(uint wb) { return kr_at(wb) + CHUNK * DK4; }

// Tokens of block b: from tb, n of them.
uint block_start(uint b) { return F.t0 + b * CHUNK; }
uint block_tokens(uint b) { return min(CHUNK, F.t1 - block_start(b)); }

// The backward's per-block scratch (gated_delta_rule_wy.h), per (row, value head, block), every
// part a whole number of vec4s:
//   S0, dSo [DK4, DV4]       the block's start state and dL/dS after it
//   U, dU, dR [CHUNK, DV4]   U, dL/dU and dL/dR = (I + A)^-T dU
//   P, Qm, E [CHUNK, CHUNK]  dL/d(k_i . k_j), dL/d(q_i . k_j), Gamma_ij dL/dGamma_ij
//   dG, dDD, dbr [CHUNK]     dL/dG_i but for the end terms, dL/dGamma_{last,i} Gamma_{last,i},
//                            the part of dbeta_i through A
//   sds [DV4]                per column, <S0, dSo>
uint keep_floats() { return 2 * DK4 * dv4() + 3 * CHUNK * dv4() + 3 * CHUNK * CHUNK + 3 * CHUNK + dv4(); }
uint keep_base(uint r, uint h, uint b) { return ((r * F.Hv + h) * blocks_in_range() + b) * keep_floats(); }
uint s0_at(uint kb) { return kb; }
uint dso_at(uint kb) { return kb + DK4 * dv4(); }
uint u_at(uint kb) { return kb + 2 * DK4 * dv4(); }
uint du_at(uint kb) { return u_at(kb) + CHUNK * dv4(); }
uint dr_at(uint kb) { return du_at(kb) + CHUNK * dv4(); }
uint p_at(uint kb) { return dr_at(kb) + CHUNK * dv4(); }
uint qm_at(uint kb) { return p_at(kb) + CHUNK * CHUNK; }
uint e_at(uint kb) { return qm_at(kb) + CHUNK * CHUNK; }
uint dg_at(uint kb) { return e_at(kb) + CHUNK * CHUNK; }
uint ddd_at(uint kb) { return dg_at(kb) + CHUNK; }
uint dbr_at(uint kb) { return ddd_at(kb) + CHUNK; }
uint sds_at(uint kb) { return dbr_at(kb) + CHUNK; }

// The examples started in block b up to token i (seg) and G of i within its example; `n` tokens.
// Also the last token's. As the prepare pass sums them.
struct Prefix {
  uint segi, segl;
  float Gi, Gl;
};
Prefix block_prefix(uint r, uint h, uint tb, uint n, uint i) {
  uint seg = 0, segi = 0;
  precise float G = 0.0, Gi = 0.0;
  for (uint m = 0; m < n; ++m) {
    if (resets(r, tb + m)) {
      ++seg;
      G = 0.0;
    } else {
      G += g[gb_at(r, tb + m, h)];
    }
    if (m == i) segi = seg, Gi = G;
  }
  return Prefix(segi, seg, Gi, G);
}
