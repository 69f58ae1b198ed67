#include "runtime/kernels/residual.h"

#include <algorithm>

#include "residual_params.h"
#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
}  // namespace

Dispatch residual_forward(const DeviceQuirks& quirks, uint32_t count, BufferSlice a, BufferSlice b,
                          BufferSlice y, float scale, DType act) {
  const bool texel = act == DType::f32 && vec4_texels_apply(quirks, {a, b, y}, count);
  Dispatch d;
  d.kernel = texel ? KernelId::residual_forward_texels
                   : act_variant(act, {KernelId::residual_forward, KernelId::residual_forward_f16,
                                       KernelId::residual_forward_bf16});
  d.spec = {kGroup};
  if (texel)
    d.bindings = {vec4_texels(a, count), vec4_texels(b, count), {y, true}};
  else
    d.bindings = {{a, false}, {b, false}, {y, true}};
  d.push = push_bytes(push::ResidualParams{count, scale});
  // One invocation per float, or per vec4 for the texel variant.
  d.groups = {grid_stride_groups(texel ? count / 4 : count, kGroup), 1, 1};
  d.label = "residual_forward";
  return d;
}

Dispatch residual_backward(const DeviceQuirks& quirks, uint32_t count, BufferSlice dy,
                           BufferSlice da, BufferSlice db, bool accumulate_a, bool accumulate_b,
                           float scale) {
  const bool texel = vec4_texels_apply(quirks, {dy, da, db}, count);
  Dispatch d;
  d.kernel = texel ? KernelId::residual_backward_texels : KernelId::residual_backward;
  d.spec = {kGroup};
  d.bindings = {texel ? vec4_texels(dy, count) : Binding{dy, false}, {da, true}, {db, true}};
  // The texel variant reads the old da and db through views of the slices it writes.
  if (texel) d.bindings.insert(d.bindings.end(), {vec4_texels(da, count), vec4_texels(db, count)});
  d.push = push_bytes(
      push::ResidualBackwardParams{count, accumulate_a ? 1u : 0u, accumulate_b ? 1u : 0u, scale});
  d.groups = {grid_stride_groups(texel ? count / 4 : count, kGroup), 1, 1};
  d.label = "residual_backward";
  return d;
}

}  // namespace remat::kernels
