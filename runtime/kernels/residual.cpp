#include "runtime/kernels/residual.h"

#include <algorithm>

#include "residual_params.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
}  // namespace

Dispatch residual_forward(uint32_t count, BufferSlice a, BufferSlice b, BufferSlice y, float scale,
                          DType act) {
  Dispatch d;
  d.kernel = act_variant(act, {KernelId::residual_forward, KernelId::residual_forward_f16,
                               KernelId::residual_forward_bf16});
  d.spec = {kGroup};
  d.bindings = {{a, false}, {b, false}, {y, true}};
  d.push = push_bytes(push::ResidualParams{count, scale});
  d.groups = {grid_stride_groups(count, kGroup), 1, 1};
  d.label = "residual_forward";
  return d;
}

Dispatch residual_backward(uint32_t count, BufferSlice dy, BufferSlice da, BufferSlice db,
                           bool accumulate_a, bool accumulate_b, float scale) {
  Dispatch d;
  d.kernel = KernelId::residual_backward;
  d.spec = {kGroup};
  d.bindings = {{dy, false}, {da, true}, {db, true}};
  d.push = push_bytes(
      push::ResidualBackwardParams{count, accumulate_a ? 1u : 0u, accumulate_b ? 1u : 0u, scale});
  d.groups = {grid_stride_groups(count, kGroup), 1, 1};
  d.label = "residual_backward";
  return d;
}

}  // namespace remat::kernels
