#include "runtime/kernels/gelu.h"

#include <algorithm>

#include "gelu_params.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
}  // namespace

Dispatch gelu_forward(uint32_t count, BufferSlice x, BufferSlice y, DType act) {
  Dispatch d;
  d.kernel = act_variant(
      act, {KernelId::gelu_forward, KernelId::gelu_forward_f16, KernelId::gelu_forward_bf16});
  d.spec = {kGroup};
  d.bindings = {{x, false}, {y, true}};
  d.push = push_bytes(push::GeluParams{count, 0});
  d.groups = {grid_stride_groups(count, kGroup), 1, 1};
  d.label = "gelu_forward";
  return d;
}

Dispatch gelu_backward(uint32_t count, BufferSlice dy, BufferSlice x, BufferSlice dx,
                       bool accumulate, DType act) {
  Dispatch d;
  d.kernel = act_variant(
      act, {KernelId::gelu_backward, KernelId::gelu_backward_f16, KernelId::gelu_backward_bf16});
  d.spec = {kGroup};
  d.bindings = {{dy, false}, {x, false}, {dx, true}};
  d.push = push_bytes(push::GeluParams{count, accumulate ? 1u : 0u});
  d.groups = {grid_stride_groups(count, kGroup), 1, 1};
  d.label = "gelu_backward";
  return d;
}

}  // namespace remat::kernels
