#include "runtime/kernels/dropout.h"

#include <algorithm>

#include "dropout_params.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kGroup = 256;

Dispatch make(KernelId kernel, uint32_t count, float p, const DropoutKey& key, bool accumulate) {
  Dispatch d;
  d.kernel = kernel;
  d.spec = {kGroup};
  d.push = push_bytes(push::DropoutParams{count, uint32_t(key.seed), uint32_t(key.seed >> 32),
                                          key.step, key.op_id, push::dropout_threshold(p),
                                          push::dropout_scale(p), accumulate ? 1u : 0u,
                                          key.step_buffer.buffer ? 1u : 0u, key.step_word});
  // 4 elements per invocation; grid-stride beyond 65535 groups (the Vulkan minimum maximum).
  d.groups = {grid_stride_groups(div_up(count, 4), kGroup), 1, 1};
  return d;
}

}  // namespace

Dispatch dropout_forward(uint32_t count, float p, const DropoutKey& key, BufferSlice x,
                         BufferSlice y, DType act) {
  Dispatch d = make(act_variant(act, {KernelId::dropout_forward, KernelId::dropout_forward_f16,
                                      KernelId::dropout_forward_bf16}),
                    count, p, key, false);
  d.bindings = {{x, false}, {y, true}, {key.step_buffer.buffer ? key.step_buffer : x, false}};
  d.label = "dropout_forward";
  return d;
}

Dispatch dropout_backward(uint32_t count, float p, const DropoutKey& key, BufferSlice dy,
                          BufferSlice dx, bool accumulate) {
  Dispatch d = make(KernelId::dropout_backward, count, p, key, accumulate);
  d.bindings = {{dy, false}, {dx, true}, {key.step_buffer.buffer ? key.step_buffer : dy, false}};
  d.label = "dropout_backward";
  return d;
}

}  // namespace remat::kernels
