#include "runtime/kernels/causal_conv1d.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "causal_conv1d_params.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;

push::CausalConv1dParams params(const CausalConv1dShape& s, BufferSlice positions, GradWrite mode) {
  if (s.K == 0 || s.K > CAUSAL_CONV1D_MAX_TAPS)
    throw std::invalid_argument("causal_conv1d: " + std::to_string(s.K) +
                                " taps; the kernels take 1 to 8");
  const bool packed = positions.buffer != VK_NULL_HANDLE;
  return {s.rows, s.T, s.C, s.K, packed ? 1u : 0u, static_cast<uint32_t>(mode)};
}

// One invocation per (row, chunk of CAUSAL_CONV1D_CHUNK tokens, channel).
uint64_t chunk_items(const CausalConv1dShape& s) {
  return uint64_t(s.rows) * div_up(s.T, CAUSAL_CONV1D_CHUNK) * s.C;
}

// Without positions the kernel never reads them; x stands in at that binding.
Binding positions_binding(BufferSlice positions, BufferSlice x) {
  return {positions.buffer != VK_NULL_HANDLE ? positions : x, false};
}
}  // namespace

Dispatch causal_conv1d_forward(const CausalConv1dShape& s, BufferSlice x, BufferSlice w,
                               BufferSlice y, BufferSlice positions) {
  Dispatch d;
  d.kernel = KernelId::causal_conv1d_forward;
  d.spec = {kGroup, 1, 1, s.K};
  d.bindings = {{x, false}, {w, false}, positions_binding(positions, x), {y, true}};
  d.push = push_bytes(params(s, positions, GradWrite::overwrite));
  d.groups = {grid_stride_groups(chunk_items(s), kGroup), 1, 1};
  d.label = "causal_conv1d_forward";
  return d;
}

Dispatch causal_conv1d_backward_input(const CausalConv1dShape& s, BufferSlice dy, BufferSlice x,
                                      BufferSlice w, BufferSlice dx, GradWrite mode,
                                      BufferSlice positions) {
  Dispatch d;
  d.kernel = KernelId::causal_conv1d_backward_input;
  d.spec = {kGroup, 1, 1, s.K};
  d.bindings = {{dy, false}, {x, false}, {w, false}, positions_binding(positions, x), {dx, true}};
  d.push = push_bytes(params(s, positions, mode));
  d.groups = {grid_stride_groups(chunk_items(s), kGroup), 1, 1};
  d.label = "causal_conv1d_backward_input";
  return d;
}

Dispatch causal_conv1d_backward_weight(const DeviceQuirks& quirks, const CausalConv1dShape& s,
                                       BufferSlice dy, BufferSlice x, BufferSlice w, BufferSlice dw,
                                       GradWrite mode, BufferSlice positions) {
  Dispatch d;
  d.kernel = KernelId::causal_conv1d_backward_weight;
  d.bindings = {{dy, false}, {x, false}, {w, false}, positions_binding(positions, x), {dw, true}};
  d.push = push_bytes(params(s, positions, mode));
  if (quirks.barriers_are_expensive) {
    // One invocation per channel, no barriers (CPU drivers).
    d.spec = {kGroup, 1, 1, s.K, 1};
    d.groups = {grid_stride_groups(s.C, kGroup), 1, 1};
  } else {
    // One workgroup per channel; its size is a constant of the kernel, never a device choice:
    // it decides the summation order.
    d.spec = {CAUSAL_CONV1D_WEIGHT_GROUP, 1, 1, s.K, 0};
    d.groups = {std::min<uint32_t>(std::max<uint32_t>(s.C, 1), 65535), 1, 1};
  }
  d.label = "causal_conv1d_backward_weight";
  return d;
}

}  // namespace remat::kernels
