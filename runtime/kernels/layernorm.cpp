#include "runtime/kernels/layernorm.h"

#include "layernorm_params.h"
#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

namespace {
// Small groups: each invocation already loops over a whole row, and BT is often only a few
// hundred, so small groups keep every core busy.
constexpr uint32_t kGroup = 32;
// The *_vec4_texels kernels: the backward's channel invocations each take four channels, so its
// groups are half as wide (C = 128 still spreads them over two workgroups); the forward's too.
constexpr uint32_t kVec4Group = 16;
}  // namespace

Dispatch layernorm_forward(const DeviceQuirks& quirks, const LayernormShape& s, BufferSlice x,
                           BufferSlice w, BufferSlice b, BufferSlice y, BufferSlice mean,
                           BufferSlice rstd, DType act) {
  const uint64_t n = uint64_t(s.rows) * s.C;
  if (act == DType::f32 && s.C % 4 == 0 && vec4_texels_apply(quirks, {x, y}, n) &&
      vec4_texels_apply(quirks, {w, b}, s.C)) {
    // layernorm_forward_vec4_texels.comp: four channels per fetch and per store, the same bits.
    Dispatch d;
    d.kernel = KernelId::layernorm_forward_vec4_texels;
    d.spec = {kVec4Group};
    d.bindings = {vec4_texels(x, n), vec4_texels(w, s.C), vec4_texels(b, s.C),
                  {y, true},         {mean, true},        {rstd, true}};
    d.push = push_bytes(push::LayernormParams{s.rows, s.C, s.eps});
    d.groups = {div_up(s.rows, kVec4Group), 1, 1};
    d.label = "layernorm_forward";
    return d;
  }
  Dispatch d;
  const bool t = quirks.texel_fetch_beats_storage_loads;
  d.kernel = act == DType::f32 && t
                 ? KernelId::layernorm_forward_texels
                 : act_variant(act, {KernelId::layernorm_forward, KernelId::layernorm_forward_f16,
                                     KernelId::layernorm_forward_bf16});
  d.spec = {kGroup};
  d.bindings = {float_input(x), float_input(w), float_input(b),
                {y, true},      {mean, true},   {rstd, true}};
  d.push = push_bytes(push::LayernormParams{s.rows, s.C, s.eps});
  d.groups = {div_up(s.rows, kGroup), 1, 1};
  d.label = "layernorm_forward";
  return d;
}

namespace {

// layernorm_backward_vec4_texels.comp: where C is a multiple of 4 and every operand starts on a
// texel boundary.
bool vec4_backward_applies(const DeviceQuirks& q, const LayernormShape& s, BufferSlice dy,
                           BufferSlice x, BufferSlice w, BufferSlice dx, BufferSlice dw,
                           BufferSlice db, DType act) {
  if (act != DType::f32 || s.C % 4 != 0) return false;
  const uint64_t n = uint64_t(s.rows) * s.C;
  if (!vec4_texels_apply(q, {dy, x, dx}, n) || !vec4_texels_apply(q, {w}, s.C)) return false;
  return dw.buffer == VK_NULL_HANDLE || vec4_texels_apply(q, {dw, db}, s.C);
}

Dispatch vec4_backward(const LayernormShape& s, BufferSlice dy, BufferSlice x, BufferSlice w,
                       BufferSlice mean, BufferSlice rstd, BufferSlice dx, BufferSlice dw,
                       BufferSlice db, bool accumulate_dx, bool accumulate_dw) {
  const uint64_t n = uint64_t(s.rows) * s.C;
  const bool weight_grad = dw.buffer != VK_NULL_HANDLE;
  Dispatch d;
  d.kernel = KernelId::layernorm_backward_vec4_texels;
  d.spec = {kVec4Group};
  d.bindings = {vec4_texels(dy, n),
                vec4_texels(x, n),
                vec4_texels(w, s.C),
                float_input(mean),
                float_input(rstd),
                {dx, true},
                {weight_grad ? dw : dx, true},
                {weight_grad ? db : dx, true},
                vec4_texels(dx, n)};
  d.push = push_bytes(
      push::LayernormBackwardParams{s.rows, s.C, accumulate_dx ? 1u : 0u, accumulate_dw ? 1u : 0u});
  d.groups = {div_up(s.rows, kVec4Group) + (weight_grad ? div_up(s.C / 4, kVec4Group) : 0), 1, 1};
  d.label = "layernorm_backward";
  return d;
}

}  // namespace

Dispatch layernorm_backward(const DeviceQuirks& quirks, const LayernormShape& s, BufferSlice dy,
                            BufferSlice x, BufferSlice w, BufferSlice mean, BufferSlice rstd,
                            BufferSlice dx, BufferSlice dw, BufferSlice db, bool accumulate_dx,
                            bool accumulate_dw, DType act) {
  if (vec4_backward_applies(quirks, s, dy, x, w, dx, dw, db, act))
    return vec4_backward(s, dy, x, w, mean, rstd, dx, dw, db, accumulate_dx, accumulate_dw);
  Dispatch d;
  const bool t = quirks.texel_fetch_beats_storage_loads;
  d.kernel = act == DType::f32 && t
                 ? KernelId::layernorm_backward_texels
                 : act_variant(act, {KernelId::layernorm_backward, KernelId::layernorm_backward_f16,
                                     KernelId::layernorm_backward_bf16});
  d.spec = {kGroup};
  // Without dw and db no channel invocation runs; their bindings repeat dx, never touched.
  const bool weight_grad = dw.buffer != VK_NULL_HANDLE;
  d.bindings = {float_input(dy),
                float_input(x),
                float_input(w),
                float_input(mean),
                float_input(rstd),
                {dx, true},
                {weight_grad ? dw : dx, true},
                {weight_grad ? db : dx, true}};
  d.push = push_bytes(
      push::LayernormBackwardParams{s.rows, s.C, accumulate_dx ? 1u : 0u, accumulate_dw ? 1u : 0u});
  // Row invocations first, then channel invocations, each starting on a group boundary.
  d.groups = {div_up(s.rows, kGroup) + (weight_grad ? div_up(s.C, kGroup) : 0), 1, 1};
  d.label = "layernorm_backward";
  return d;
}

}  // namespace remat::kernels
