#include "runtime/kernels/cross_entropy.h"

#include <algorithm>

#include "cross_entropy_params.h"

namespace remat::kernels {

namespace {

constexpr uint32_t kRowsPerGroup = 32;  // serial variant: rows (invocations) per workgroup
constexpr uint32_t kRowGroup = 256;     // workgroup variant: invocations per row (shader max 256)

Dispatch make(KernelId kernel, const DeviceQuirks& q, const CrossEntropyShape& s,
              BufferSlice logits, BufferSlice targets, BufferSlice out, uint32_t scale_word) {
  const bool per_workgroup = !q.barriers_are_expensive;
  Dispatch d;
  d.kernel = kernel;
  d.spec = {per_workgroup ? kRowGroup : kRowsPerGroup, 1, 1, per_workgroup ? 1u : 0u};
  d.bindings = {{logits, false}, {targets, false}, {out, true}};
  d.push = push_bytes(push::CrossEntropyParams{s.rows, s.V, scale_word});
  // A 2-D grid keeps each axis within the 65535 groups every device supports.
  const uint32_t groups = per_workgroup ? s.rows : div_up(s.rows, kRowsPerGroup);
  const uint32_t gx = std::clamp(groups, 1u, 65535u);
  d.groups = {gx, div_up(groups, gx), 1};
  return d;
}

}  // namespace

Dispatch cross_entropy_forward(const DeviceQuirks& quirks, const CrossEntropyShape& s,
                               BufferSlice logits, BufferSlice targets, BufferSlice losses,
                               DType act) {
  Dispatch d =
      make(act_variant(act, {KernelId::cross_entropy_forward, KernelId::cross_entropy_forward_f16,
                             KernelId::cross_entropy_forward_bf16}),
           quirks, s, logits, targets, losses, 0);
  d.label = "cross_entropy_forward";
  return d;
}

Dispatch cross_entropy_backward(const DeviceQuirks& quirks, const CrossEntropyShape& s,
                                BufferSlice logits, BufferSlice targets, BufferSlice dlogits,
                                const LossScale& scale, DType act) {
  Dispatch d =
      make(act_variant(act, {KernelId::cross_entropy_backward, KernelId::cross_entropy_backward_f16,
                             KernelId::cross_entropy_backward_bf16}),
           quirks, s, logits, targets, dlogits, scale.word);
  d.bindings.push_back({scale.buffer, false});
  d.label = "cross_entropy_backward";
  return d;
}

}  // namespace remat::kernels
