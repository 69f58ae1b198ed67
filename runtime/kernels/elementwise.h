// Dispatches for the small utility kernels: fill and copy.
#pragma once

#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// dst[0..count) = value (floats).
Dispatch fill(BufferSlice dst, uint32_t count, float value);
// dst[dst_offset + i] = src[src_offset + i] for i < count (offsets and count in floats).
Dispatch copy(BufferSlice src, BufferSlice dst, uint32_t count, uint32_t src_offset = 0,
              uint32_t dst_offset = 0);

}  // namespace remat::kernels
