#include "runtime/kernels/attention.h"

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

// llvmpipe (the CPU implementation these quirks describe) ends all loops of an invocation after
// 65535 iterations in total, silently. The longest row of either kernel loops about
// T * (2 * hs / (4 * U) + 2) times; refuse shapes beyond that rather than return wrong numbers.
void check_loop_budget(const DeviceQuirks& q, const AttentionShape& s, uint32_t hs) {
  if (q.max_loop_iterations == 0) return;
  const uint64_t per_row = 2 * hs / (4 * unroll(hs)) + 2;
  const uint64_t iterations = uint64_t(s.T) * per_row + uint64_t(s.T / kKeyBlock + 1) * hs / 4;
  if (iterations > q.max_loop_iterations)
    throw std::invalid_argument("attention: T = " + std::to_string(s.T) + " with head size " +
                                std::to_string(hs) + " needs ~" + std::to_string(iterations) +
                                " loop iterations per invocation; this driver stops at " +
                                std::to_string(q.max_loop_iterations));
}

push::AttentionParams params(const AttentionShape& s, uint32_t hs, GradWrite mode) {
  return {s.B,
          s.T,
          s.C,
          s.NH,
          static_cast<float>(1.0 / std::sqrt(double(hs))),
          static_cast<uint32_t>(mode)};
}

}  // namespace

Dispatch attention_forward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice qkv,
                           BufferSlice out, BufferSlice lse) {
  const uint32_t hs = head_size(s);
  check_loop_budget(quirks, s, hs);
  const uint32_t wx = rows_per_group(quirks, hs, 2);  // q, acc
  Dispatch d;
  // CPU drivers read qkv through a texel view (see attention_forward_texels.comp); same bits.
  const bool texels = quirks.texel_fetch_beats_storage_loads;
  d.kernel = texels ? KernelId::attention_forward_texels : KernelId::attention_forward;
  d.spec = {wx, 1, 1, hs, kKeyBlock, unroll(hs)};
  d.bindings = {{qkv, false}, {out, true}, {lse, true}};
  d.push = push_bytes(params(s, hs, GradWrite::overwrite));
  d.groups = {div_up(s.T, wx), s.B * s.NH, 1};
  d.label = "attention_forward";
  return d;
}

Dispatch attention_backward(const DeviceQuirks& quirks, const AttentionShape& s, BufferSlice dout,
                            BufferSlice qkv, BufferSlice out, BufferSlice lse, BufferSlice dqkv,
                            GradWrite mode) {
  const uint32_t hs = head_size(s);
  check_loop_budget(quirks, s, hs);
  const uint32_t wx = rows_per_group(quirks, hs, 4);  // k, v, dk, dv (q, dout, dq for dq rows)
  Dispatch d;
  // CPU drivers read the inputs through texel views (see attention_backward_texels.comp).
  const bool texels = quirks.texel_fetch_beats_storage_loads;
  d.kernel = texels ? KernelId::attention_backward_texels : KernelId::attention_backward;
  d.spec = {wx, 1, 1, hs, unroll(hs)};
  d.bindings = {{dout, false}, {qkv, false}, {out, false}, float_input(lse), {dqkv, true}};
  d.push = push_bytes(params(s, hs, mode));
  d.groups = {div_up(s.T, wx), s.B * s.NH, 2};  // z = 0: dq rows, z = 1: dk/dv rows
  d.label = "attention_backward";
  return d;
}

}  // namespace remat::kernels
