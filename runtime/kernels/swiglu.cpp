#include "runtime/kernels/swiglu.h"

#include "swiglu_params.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
}  // namespace

Dispatch swiglu_forward(uint32_t count, BufferSlice g, BufferSlice u, BufferSlice h, DType act,
                        bool gelu_gate) {
  Dispatch d;
  d.kernel = act_variant(
      act, {KernelId::swiglu_forward, KernelId::swiglu_forward_f16, KernelId::swiglu_forward_bf16});
  d.spec = {kGroup};
  d.bindings = {{g, false}, {u, false}, {h, true}};
  d.push = push_bytes(push::SwigluParams{count, 0, 0, gelu_gate ? 1u : 0u});
  d.groups = {grid_stride_groups(count, kGroup), 1, 1};
  d.label = "swiglu_forward";
  return d;
}

Dispatch swiglu_backward(uint32_t count, BufferSlice dh, BufferSlice g, BufferSlice u,
                         BufferSlice dg, BufferSlice du, GradWrite dg_mode, GradWrite du_mode,
                         DType act, bool gelu_gate) {
  Dispatch d;
  d.kernel = act_variant(act, {KernelId::swiglu_backward, KernelId::swiglu_backward_f16,
                               KernelId::swiglu_backward_bf16});
  d.spec = {kGroup};
  d.bindings = {{dh, false}, {g, false}, {u, false}, {dg, true}, {du, true}};
  d.push = push_bytes(push::SwigluParams{count, static_cast<uint32_t>(dg_mode),
                                         static_cast<uint32_t>(du_mode), gelu_gate ? 1u : 0u});
  d.groups = {grid_stride_groups(count, kGroup), 1, 1};
  d.label = "swiglu_backward";
  return d;
}

}  // namespace remat::kernels
