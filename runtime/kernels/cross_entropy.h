// Dispatches for the fused softmax + cross-entropy over the vocabulary.
#pragma once

#include "runtime/kernels/act_variant.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct CrossEntropyShape {
  uint32_t rows = 0;  // BT
  uint32_t V = 0;
};

// Where the backward reads its scale when it runs: the float at index `word` of `buffer`. The
// host writes 1/(trained targets of the optimizer step) there before each step, so one recorded
// command buffer serves every step whatever its loss mask. With per_row each row r reads its own
// scale at word + r (a preference objective's per-row coefficients); without, every row reads
// the one at word.
struct LossScale {
  BufferSlice buffer;
  uint32_t word = 0;
  bool per_row = false;
};

// losses[rows] from logits[rows,V] and targets[rows] (u32); 0 where the target is kIgnoreTarget.
// With quirks.barriers_are_expensive one invocation handles a row serially; otherwise one
// workgroup per row reduces in shared memory.
Dispatch cross_entropy_forward(const DeviceQuirks& quirks, const CrossEntropyShape& s,
                               BufferSlice logits, BufferSlice targets, BufferSlice losses,
                               DType act = DType::f32);

// dlogits[rows,V] = scale * (softmax - onehot), overwritten; rows whose target is kIgnoreTarget
// are all zeros. Same variants as the forward.
Dispatch cross_entropy_backward(const DeviceQuirks& quirks, const CrossEntropyShape& s,
                                BufferSlice logits, BufferSlice targets, BufferSlice dlogits,
                                const LossScale& scale, DType act = DType::f32);

}  // namespace remat::kernels
