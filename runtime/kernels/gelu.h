// Dispatches for GELU, the tanh approximation GPT-2 uses.
#pragma once

#include "runtime/kernels/act_variant.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// y[i] = gelu(x[i]) for i < count; x and y stored as `act`. With fp32 activations, where
// quirks.texel_fetch_beats_storage_loads holds and count and the slices allow (vec4_texels.h),
// four floats per iteration through texel views; the same bits either way.
Dispatch gelu_forward(const DeviceQuirks& quirks, uint32_t count, BufferSlice x, BufferSlice y,
                      DType act = DType::f32);
// dx[i] = (accumulate ? dx[i] : 0) + dy[i] * gelu'(x[i]); x stored as `act`; variants as the
// forward's.
Dispatch gelu_backward(const DeviceQuirks& quirks, uint32_t count, BufferSlice dy, BufferSlice x,
                       BufferSlice dx, bool accumulate, DType act = DType::f32);

}  // namespace remat::kernels
