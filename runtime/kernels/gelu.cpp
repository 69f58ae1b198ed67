#include "runtime/kernels/gelu.h"

#include <algorithm>

#include "gelu_params.h"
#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
}  // namespace

Dispatch gelu_forward(const DeviceQuirks& quirks, uint32_t count, BufferSlice x, BufferSlice y,
                      DType act) {
  const bool texel = act == DType::f32 && vec4_texels_apply(quirks, {x, y}, count);
  Dispatch d;
  d.kernel = texel ? KernelId::gelu_forward_texels
                   : act_variant(act, {KernelId::gelu_forward, KernelId::gelu_forward_f16,
                                       KernelId::gelu_forward_bf16});
  d.spec = {kGroup};
  d.bindings = {texel ? vec4_texels(x, count) : Binding{x, false}, {y, true}};
  d.push = push_bytes(push::GeluParams{count, 0});
  // One invocation per float, or per vec4 for the texel variant.
  d.groups = {grid_stride_groups(texel ? count / 4 : count, kGroup), 1, 1};
  d.label = "gelu_forward";
  return d;
}

Dispatch gelu_backward(const DeviceQuirks& quirks, uint32_t count, BufferSlice dy, BufferSlice x,
                       BufferSlice dx, bool accumulate, DType act) {
  const bool texel = act == DType::f32 && vec4_texels_apply(quirks, {dy, x, dx}, count);
  Dispatch d;
  d.kernel = texel ? KernelId::gelu_backward_texels
                   : act_variant(act, {KernelId::gelu_backward, KernelId::gelu_backward_f16,
                                       KernelId::gelu_backward_bf16});
  d.spec = {kGroup};
  if (texel)  // the old dx is read through a view of the slice the kernel writes
    d.bindings = {
        vec4_texels(dy, count), vec4_texels(x, count), {dx, true}, vec4_texels(dx, count)};
  else
    d.bindings = {{dy, false}, {x, false}, {dx, true}};
  d.push = push_bytes(push::GeluParams{count, accumulate ? 1u : 0u});
  d.groups = {grid_stride_groups(texel ? count / 4 : count, kGroup), 1, 1};
  d.label = "gelu_backward";
  return d;
}

}  // namespace remat::kernels
