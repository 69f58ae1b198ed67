// When the four-floats-per-iteration texel kernels (gelu_*_texels, residual_*_texels,
// adamw_texels) apply, and the RGBA32F views they read through.
#pragma once

#include <initializer_list>

#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// Texel views start on 16-byte boundaries wherever the quirk is set (device_plan.cpp requires
// minTexelBufferOffsetAlignment <= 16); tensors are placed on 16-byte boundaries, so this only
// rules out slices a caller cut at an odd element.
inline constexpr uint64_t kTexelAlignment = 16;

// A read-only RGBA32F texel view of the first `count` floats of `s` (count a multiple of 4).
Binding vec4_texels(BufferSlice s, uint64_t count);

// The device prefers texel fetches (DeviceQuirks::texel_fetch_beats_storage_loads), `count` is a
// positive multiple of 4 and every operand starts on a texel boundary and holds `count` floats.
bool vec4_texels_apply(const DeviceQuirks& quirks, std::initializer_list<BufferSlice> operands,
                       uint64_t count);

}  // namespace remat::kernels
