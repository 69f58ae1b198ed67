// Dispatches for the fused softmax + cross-entropy over the vocabulary.
#pragma once

#include "runtime/device_plan.h"
#include "runtime/executor.h"

namespace remat::kernels {

struct CrossEntropyShape {
  uint32_t rows = 0;  // BT
  uint32_t V = 0;
};

// losses[rows] from logits[rows,V] and targets[rows] (u32). With quirks.barriers_are_expensive
// one invocation handles a row serially; otherwise one workgroup per row reduces in shared memory.
Dispatch cross_entropy_forward(const DeviceQuirks& quirks, const CrossEntropyShape& s,
                               BufferSlice logits, BufferSlice targets, BufferSlice losses);

// dlogits[rows,V] = scale * (softmax - onehot), overwritten; scale defaults to 1/rows, the
// gradient of the mean loss. Same variants as the forward.
Dispatch cross_entropy_backward(const DeviceQuirks& quirks, const CrossEntropyShape& s,
                                BufferSlice logits, BufferSlice targets, BufferSlice dlogits,
                                float scale = 0.0f);

}  // namespace remat::kernels
