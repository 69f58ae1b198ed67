#include "runtime/kernels/rmsnorm.h"

#include <stdexcept>
#include <string>

#include "rmsnorm_params.h"

namespace remat::kernels {

namespace {
// Small groups, as LayerNorm: each invocation loops over a whole row and rows are often only a
// few hundred, so small groups keep every core busy.
constexpr uint32_t kGroup = 32;

uint32_t x_stride(const RmsnormShape& s) {
  if (s.x_stride != 0 && s.x_stride < s.C)
    throw std::invalid_argument("rmsnorm: x's row stride " + std::to_string(s.x_stride) +
                                " is shorter than its rows of " + std::to_string(s.C));
  return s.x_stride == 0 ? s.C : s.x_stride;
}
}  // namespace

Dispatch rmsnorm_forward(const DeviceQuirks& quirks, const RmsnormShape& s, BufferSlice x,
                         BufferSlice w, BufferSlice y, BufferSlice rstd, DType act) {
  Dispatch d;
  const bool t = quirks.texel_fetch_beats_storage_loads;
  d.kernel = act == DType::f32 && t
                 ? KernelId::rmsnorm_forward_texels
                 : act_variant(act, {KernelId::rmsnorm_forward, KernelId::rmsnorm_forward_f16,
                                     KernelId::rmsnorm_forward_bf16});
  d.spec = {kGroup};
  d.bindings = {float_input(x), float_input(w), {y, true}, {rstd, true}};
  d.push =
      push_bytes(push::RmsnormParams{s.rows, s.C, s.eps, s.unit_offset ? 1u : 0u, x_stride(s)});
  d.groups = {div_up(s.rows, kGroup), 1, 1};
  d.label = "rmsnorm_forward";
  return d;
}

Dispatch rmsnorm_backward(const DeviceQuirks& quirks, const RmsnormShape& s, BufferSlice dy,
                          BufferSlice x, BufferSlice w, BufferSlice rstd, BufferSlice dx,
                          BufferSlice dw, GradWrite dx_mode, GradWrite dw_mode, DType act) {
  Dispatch d;
  const bool t = quirks.texel_fetch_beats_storage_loads;
  d.kernel = act == DType::f32 && t
                 ? KernelId::rmsnorm_backward_texels
                 : act_variant(act, {KernelId::rmsnorm_backward, KernelId::rmsnorm_backward_f16,
                                     KernelId::rmsnorm_backward_bf16});
  d.spec = {kGroup};
  // A frozen weight (dw empty): no channel invocation runs; its binding repeats dx, never touched.
  const bool weight_grad = dw.buffer != VK_NULL_HANDLE;
  d.bindings = {float_input(dy),   float_input(x), float_input(w),
                float_input(rstd), {dx, true},     {weight_grad ? dw : dx, true}};
  d.push = push_bytes(push::RmsnormBackwardParams{s.rows, s.C, static_cast<uint32_t>(dx_mode),
                                                  static_cast<uint32_t>(dw_mode),
                                                  s.unit_offset ? 1u : 0u, x_stride(s)});
  // Row invocations first, then channel invocations, each starting on a group boundary.
  d.groups = {div_up(s.rows, kGroup) + (weight_grad ? div_up(s.C, kGroup) : 0), 1, 1};
  d.label = "rmsnorm_backward";
  return d;
}

}  // namespace remat::kernels
