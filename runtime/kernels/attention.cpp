#include "runtime/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attention_params.h"

namespace remat::kernels {

namespace {

uint32_t head_size(const AttentionShape& s) {
  if (s.NH == 0 || s.C % s.NH != 0)
    throw std::invalid_argument("attention: C = " + std::to_string(s.C) +
                                " is not a multiple of the head count " + std::to_string(s.NH));
  const uint32_t hs = s.C / s.NH;
  if (hs % 4 != 0 || hs > kMaxAttentionHeadSize)
    throw std::invalid_argument("attention: head size " + std::to_string(hs) +
                                " must be a multiple of 4 and at most " +
                                std::to_string(kMaxAttentionHeadSize));
  return hs;
}

// Key/value heads, KV = 0 resolved to NH; checked to divide the query heads.
uint32_t kv_heads(const AttentionShape& s) {
  const uint32_t kv = s.KV == 0 ? s.NH : s.KV;
  if (kv > s.NH || s.NH % kv != 0)
    throw std::invalid_argument("attention: " + std::to_string(s.KV) +
                                " key/value heads do not divide the " + std::to_string(s.NH) +
                                " query heads");
  return kv;
}

// vec4s of a head row per loop iteration (the shaders unroll them): 2 where they divide.
uint32_t unroll(uint32_t hs) {
  return (hs / 4) % 2 == 0 ? 2 : 1;
}

// One invocation per row; each keeps `rows` head-sized rows in workgroup memory (see the
// shaders). CPU drivers run a workgroup's invocations 8 at a time in SIMD lanes, so a small
// workgroup wastes little on short sequences (T = 23); GPUs want wider groups. Either way the
// group shrinks until its rows fit 16 KiB, the shared memory every Vulkan device has.
uint32_t rows_per_group(const DeviceQuirks& q, uint32_t hs, uint32_t rows) {
  constexpr uint32_t kSharedBytes = 16384;
  uint32_t wx = q.barriers_are_expensive ? 16 : 64;
  while (wx > 1 && wx * rows * hs * sizeof(float) > kSharedBytes) wx /= 2;
  return wx;
}

constexpr uint32_t kKeyBlock = 8;  // keys per online-softmax rescale in the forward

// How one dispatch runs: the kernel family and the rows each invocation holds.
struct Variant {
  bool texels;    // texel views, rows in registers, head and key-block loops unrolled
  uint32_t rows;  // rows per invocation
};

// CPU drivers read f32 operands through texel views (attention_*_texels.comp; same bits). Those
// kernels keep their rows in registers (attention_rows.glsl) and share each key's (or query's)
// reads between rows where the head is small enough that the rows stay near the registers: four
// up to hs 32 (the tiny step's backward ~10% faster than with two, docs/benchmarks-speed.md;
// eight was slower), two up to 64; the shared-memory kernels (and the 16-bit ones, which read
// storage buffers) hold one row.
Variant variant(const DeviceQuirks& q, DType act, uint32_t hs) {
  const bool texels = act == DType::f32 && q.texel_fetch_beats_storage_loads;
  return {texels, texels && hs <= 32 ? 4u : texels && hs <= 64 ? 2u : 1u};
}

// llvmpipe (the CPU implementation these quirks describe) ends all loops of an invocation after
// 65535 iterations in total, silently. The longest row of either kernel visits `extent` keys
// (queries): T, or with a window at most window + rows - 1 of them (and the rest of the block
// the window starts in). Where the head loops are loops it loops about
// extent * (2 * hs / (4 * U) + 2) times, `group` times over for the backward's dk/dv rows (which
// loop over the query heads of their group); the texel kernels unroll their head loops
// (attention_rows.glsl), so only their key (query) loops count. Refuse shapes beyond that
// rather than return wrong numbers.
void check_loop_budget(const DeviceQuirks& q, const AttentionShape& s, uint32_t hs, uint32_t group,
                       bool segments, Variant v) {
  if (q.max_loop_iterations == 0) return;
  const uint64_t extent =
      s.window != 0 ? std::min<uint64_t>(s.T, uint64_t(s.window) + v.rows - 1 + kKeyBlock - 1)
                    : s.T;
  // The forward's key blocks: one more where the window's start is not on a block boundary.
  const uint64_t blocks = extent / kKeyBlock + (s.window != 0 ? 2 : 1);
  const uint64_t search = segments ? extent : 0;  // packed rows: the search for the example's end
  const uint64_t iterations =
      v.texels ? extent * group + group + blocks + search
               : extent * group * (2 * hs / (4 * unroll(hs)) + 2) + blocks * hs / 4 + search;
  if (iterations > q.max_loop_iterations)
    throw std::invalid_argument("attention: T = " + std::to_string(s.T) + " with head size " +
                                std::to_string(hs) + " and " + std::to_string(group) +
                                " query heads per loop needs ~" + std::to_string(iterations) +
                                " loop iterations per invocation; this driver stops at " +
                                std::to_string(q.max_loop_iterations));
}

// Where the heads of q, k or v (and of dq, dk or dv) lie: row (b, t) at (b T + t) * stride
// floats, head 0 at column offset.
struct Layout {
  uint32_t stride = 0, offset = 0;
};
struct QkvLayout {
  Layout q, k, v;
};

// GPT-2's c_attn output: q, k and v side by side in rows of 3C.
QkvLayout fused_qkv(const AttentionShape& s) {
  return {{3 * s.C, 0}, {3 * s.C, s.C}, {3 * s.C, 2 * s.C}};
}
// Separate compact tensors: q [B,T,NH*D], k and v [B,T,KV*D].
QkvLayout separate_qkv(const AttentionShape& s, uint32_t hs, uint32_t kv) {
  return {{s.C, 0}, {kv * hs, 0}, {kv * hs, 0}};
}

// The checked shape of one dispatch: head size, key/value heads, variant, push constants.
struct Checked {
  uint32_t hs, kv;
  Variant v;
  push::AttentionParams params;
};

// The score scale: the shape's, or 1/sqrt(D).
float score_scale(const AttentionShape& s, uint32_t hs) {
  if (s.scale != 0.0f) {
    if (!std::isfinite(s.scale))
      throw std::invalid_argument("attention: the score scale must be finite");
    return s.scale;
  }
  return static_cast<float>(1.0 / std::sqrt(double(hs)));
}

Checked check(const DeviceQuirks& quirks, const AttentionShape& s, const QkvLayout& l,
              GradWrite mode, bool backward, bool segments, DType act) {
  const uint32_t hs = head_size(s), kv = kv_heads(s);
  const Variant v = variant(quirks, act, hs);
  check_loop_budget(quirks, s, hs, backward ? s.NH / kv : 1, segments, v);
  // Indices are 32-bit vec4 offsets in the kernels.
  const uint32_t widest = std::max({l.q.stride, l.k.stride, l.v.stride, s.C});
  if (uint64_t(s.B) * s.T * widest / 4 > UINT32_MAX)
    throw std::invalid_argument("attention: B*T rows of " + std::to_string(widest) +
                                " floats exceed 32-bit indexing");
  const push::AttentionParams p{s.B, s.T, s.NH, kv, hs / 4, score_scale(s, hs),
                                static_cast<uint32_t>(mode), l.q.stride / 4, l.q.offset / 4,
                                l.k.stride / 4, l.k.offset / 4, l.v.stride / 4, l.v.offset / 4,
                                segments ? 1u : 0u,
                                // A window of T or more keys is all of them; capped, the
                                // kernels' window sums cannot overflow.
                                std::min(s.window, s.T)};
  return {hs, kv, v, p};
}

// Packed rows' positions, or (plain causal rows) a stand-in the kernel does not read.
BufferSlice positions_or(BufferSlice positions, BufferSlice stand_in, const AttentionShape& s) {
  if (positions.buffer == VK_NULL_HANDLE) return stand_in;
  if (positions.size < uint64_t(s.B) * s.T * sizeof(uint32_t))
    throw std::invalid_argument("attention: positions hold fewer than B*T ids");
  return positions;
}

Dispatch forward(const DeviceQuirks& quirks, const AttentionShape& s, const QkvLayout& l,
                 BufferSlice q, BufferSlice k, BufferSlice v, BufferSlice out, BufferSlice lse,
                 DType act, BufferSlice positions) {
  const bool segments = positions.buffer != VK_NULL_HANDLE;
  const Checked c = check(quirks, s, l, GradWrite::overwrite, false, segments, act);
  const uint32_t wx = rows_per_group(quirks, c.hs, 2);  // q, acc
  Dispatch d;
  d.kernel = c.v.texels
                 ? KernelId::attention_forward_texels
                 : act_variant(act, {KernelId::attention_forward, KernelId::attention_forward_f16,
                                     KernelId::attention_forward_bf16});
  const uint32_t rows = c.v.rows;
  d.spec = {wx, 1, 1, c.hs, kKeyBlock, unroll(c.hs), rows};
  d.bindings = {{q, false},  {k, false},  {v, false},
                {out, true}, {lse, true}, {positions_or(positions, q, s), false}};
  d.push = push_bytes(c.params);
  d.groups = {div_up(s.T, wx * rows), s.B * s.NH, 1};
  return d;
}

struct BackwardIo {
  BufferSlice dout, q, k, v, out, lse, dq, dk, dv;
  BufferSlice positions;  // packed rows only
};

Dispatch backward(const DeviceQuirks& quirks, const AttentionShape& s, const QkvLayout& l,
                  const BackwardIo& io, GradWrite mode, DType act) {
  const bool segments = io.positions.buffer != VK_NULL_HANDLE;
  const Checked c = check(quirks, s, l, mode, true, segments, act);
  const uint32_t wx = rows_per_group(quirks, c.hs, 4);  // k, v, dk, dv (q, dout, dq for dq rows)
  Dispatch d;
  d.kernel = c.v.texels
                 ? KernelId::attention_backward_texels
                 : act_variant(act, {KernelId::attention_backward, KernelId::attention_backward_f16,
                                     KernelId::attention_backward_bf16});
  const uint32_t rows = c.v.rows;
  d.spec = {wx, 1, 1, c.hs, unroll(c.hs), rows};
  d.bindings = {{io.dout, false}, {io.q, false},
                {io.k, false},    {io.v, false},
                {io.out, false},  float_input(io.lse),
                {io.dq, true},    {io.dk, true},
                {io.dv, true},    {positions_or(io.positions, io.q, s), false}};
  d.push = push_bytes(c.params);
  // z = 0: dq rows of the B*NH query heads; z = 1: dk/dv rows of the B*KV key/value heads (the
  // invocations past B*KV return at once).
  d.groups = {div_up(s.T, wx * rows), s.B * s.NH, 2};
  return d;
}

// GPT-2's fused qkv holds as many key/value heads as query heads.
void require_multi_head(const AttentionShape& s) {
  if (s.KV != 0 && s.KV != s.NH)
    throw std::invalid_argument("attention: a fused qkv holds NH key/value heads, not KV = " +
                                std::to_string(s.KV));
}

}  // namespace

Dispatch attention_forward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice qkv,
                           BufferSlice out, BufferSlice lse, DType act, BufferSlice positions) {
  require_multi_head(s);
  Dispatch d = forward(quirks, s, fused_qkv(s), qkv, qkv, qkv, out, lse, act, positions);
  d.label = "attention_forward";
  return d;
}

Dispatch attention_backward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice dout,
                            BufferSlice qkv, BufferSlice out, BufferSlice lse, BufferSlice dqkv,
                            GradWrite mode, DType act, BufferSlice positions) {
  require_multi_head(s);
  Dispatch d = backward(quirks, s, fused_qkv(s),
                        {dout, qkv, qkv, qkv, out, lse, dqkv, dqkv, dqkv, positions}, mode, act);
  d.label = "attention_backward";
  return d;
}

Dispatch gqa_attention_forward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice q,
                               BufferSlice k, BufferSlice v, BufferSlice out, BufferSlice lse,
                               DType act, BufferSlice positions) {
  Dispatch d = forward(quirks, s, separate_qkv(s, head_size(s), kv_heads(s)), q, k, v, out, lse,
                       act, positions);
  d.label = "gqa_attention_forward";
  return d;
}

Dispatch gqa_attention_backward(const DeviceQuirks& quirks, const AttentionShape& s,
                                BufferSlice dout, BufferSlice q, BufferSlice k, BufferSlice v,
                                BufferSlice out, BufferSlice lse, BufferSlice dq, BufferSlice dk,
                                BufferSlice dv, GradWrite mode, DType act, BufferSlice positions) {
  Dispatch d = backward(quirks, s, separate_qkv(s, head_size(s), kv_heads(s)),
                        {dout, q, k, v, out, lse, dq, dk, dv, positions}, mode, act);
  d.label = "gqa_attention_backward";
  return d;
}

}  // namespace remat::kernels
