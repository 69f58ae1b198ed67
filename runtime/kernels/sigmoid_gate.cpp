#include "runtime/kernels/sigmoid_gate.h"

#include "sigmoid_gate_params.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;

push::SigmoidGateParams params(const SigmoidGateShape& s, GradWrite dx, GradWrite dgate) {
  return {s.count,
          s.D,
          s.gate_head_stride,
          s.gate_offset,
          static_cast<uint32_t>(dx),
          static_cast<uint32_t>(dgate)};
}
}  // namespace

Dispatch sigmoid_gate_forward(const SigmoidGateShape& s, BufferSlice x, BufferSlice gate,
                              BufferSlice y) {
  Dispatch d;
  d.kernel = KernelId::sigmoid_gate_forward;
  d.spec = {kGroup};
  d.bindings = {{x, false}, {gate, false}, {y, true}};
  d.push = push_bytes(params(s, GradWrite::overwrite, GradWrite::overwrite));
  d.groups = {grid_stride_groups(s.count, kGroup), 1, 1};
  d.label = "sigmoid_gate_forward";
  return d;
}

Dispatch sigmoid_gate_backward(const SigmoidGateShape& s, BufferSlice dy, BufferSlice x,
                               BufferSlice gate, BufferSlice dx, BufferSlice dgate,
                               GradWrite dx_mode, GradWrite dgate_mode) {
  Dispatch d;
  d.kernel = KernelId::sigmoid_gate_backward;
  d.spec = {kGroup};
  d.bindings = {{dy, false}, {x, false}, {gate, false}, {dx, true}, {dgate, true}};
  d.push = push_bytes(params(s, dx_mode, dgate_mode));
  d.groups = {grid_stride_groups(s.count, kGroup), 1, 1};
  d.label = "sigmoid_gate_backward";
  return d;
}

}  // namespace remat::kernels
