// Dispatches for dropout with a regenerated (never stored) mask.
#pragma once

#include <cstdint>

#include "runtime/kernels/act_variant.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// Which mask: the same key gives the same mask, in a recomputed forward and in the backward.
struct DropoutKey {
  uint64_t seed = 0;   // the run's seed
  uint32_t step = 0;   // training step
  uint32_t op_id = 0;  // which dropout op of the graph
  // When set, the kernel adds steps[step_word] of this buffer to `step`, so a recorded command
  // buffer uses the step the host wrote before each submission.
  BufferSlice step_buffer;
  uint32_t step_word = 0;
};

// y = x * mask / (1 - p), P(drop) = p in [0, 1); x and y stored as `act`.
Dispatch dropout_forward(uint32_t count, float p, const DropoutKey& key, BufferSlice x,
                         BufferSlice y, DType act = DType::f32);
// dx (=|+=) dy * mask / (1 - p) with the forward's mask.
Dispatch dropout_backward(uint32_t count, float p, const DropoutKey& key, BufferSlice dy,
                          BufferSlice dx, bool accumulate);

}  // namespace remat::kernels
