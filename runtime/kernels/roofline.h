// Dispatches that measure a device's ceilings: peak FMA throughput (no memory traffic but one
// store per invocation) and peak streaming-copy bandwidth. `remat bench --kernels` states every
// kernel's rate as a fraction of these.
#pragma once

#include <cstdint>

#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// FMA steps per loop iteration of peak_fma.comp, per invocation (8 chains x 16 steps).
constexpr uint64_t kPeakFmaStepsPerIteration = 128;

// out[i] for i < count: the sum of 8 chains, chain k = (i + k) after iterations·16 steps of
// x = fma(x, a, b). out must hold count floats.
Dispatch peak_fma(uint32_t count, uint32_t iterations, float a, float b, BufferSlice out);
// FLOPs of one peak_fma dispatch (an FMA counts 2).
double peak_fma_flops(uint32_t count, uint32_t iterations);

// dst[i] = src[i] for i < count vec4 elements (16 bytes each); both hold at least count·16 bytes.
Dispatch peak_copy(uint32_t count, BufferSlice src, BufferSlice dst);
// Bytes moved by one peak_copy dispatch (read plus written).
double peak_copy_bytes(uint32_t count);

}  // namespace remat::kernels
