#include "runtime/kernels/layernorm.h"

#include "layernorm_params.h"

namespace remat::kernels {

namespace {
// Small groups: each invocation already loops over a whole row, and BT is often only a few
// hundred, so small groups keep every core busy.
constexpr uint32_t kGroup = 32;
}  // namespace

Dispatch layernorm_forward(const DeviceQuirks& quirks, const LayernormShape& s, BufferSlice x,
                           BufferSlice w, BufferSlice b, BufferSlice y, BufferSlice mean,
                           BufferSlice rstd, DType act) {
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

Dispatch layernorm_backward(const DeviceQuirks& quirks, const LayernormShape& s, BufferSlice dy,
                            BufferSlice x, BufferSlice w, BufferSlice mean, BufferSlice rstd,
                            BufferSlice dx, BufferSlice dw, BufferSlice db, bool accumulate_dx,
                            bool accumulate_dw, DType act) {
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
