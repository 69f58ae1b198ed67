#include "runtime/kernels/gelu.h"

#include <algorithm>

#include "gelu_params.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
// The shaders loop with a grid stride, so any count fits in the 65535 groups every Vulkan
// device supports (maxComputeWorkGroupCount[0] minimum).
uint32_t groups_for(uint32_t count) {
  return std::clamp(div_up(count, kGroup), 1u, 65535u);
}
}  // namespace

Dispatch gelu_forward(uint32_t count, BufferSlice x, BufferSlice y) {
  Dispatch d;
  d.kernel = KernelId::gelu_forward;
  d.spec = {kGroup};
  d.bindings = {{x, false}, {y, true}};
  d.push = push_bytes(push::GeluParams{count, 0});
  d.groups = {groups_for(count), 1, 1};
  d.label = "gelu_forward";
  return d;
}

Dispatch gelu_backward(uint32_t count, BufferSlice dy, BufferSlice x, BufferSlice dx,
                       bool accumulate) {
  Dispatch d;
  d.kernel = KernelId::gelu_backward;
  d.spec = {kGroup};
  d.bindings = {{dy, false}, {x, false}, {dx, true}};
  d.push = push_bytes(push::GeluParams{count, accumulate ? 1u : 0u});
  d.groups = {groups_for(count), 1, 1};
  d.label = "gelu_backward";
  return d;
}

}  // namespace remat::kernels
