// Dispatches for the residual connection y = a + b and its gradient routing.
#pragma once

#include "runtime/kernels/act_variant.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// y[i] = a[i] + scale·b[i] for i < count; a, b and y stored as `act`. With fp32 activations,
// where quirks.texel_fetch_beats_storage_loads holds and count and the slices allow
// (vec4_texels.h), four floats per iteration through texel views; the same bits either way.
Dispatch residual_forward(const DeviceQuirks& quirks, uint32_t count, BufferSlice a, BufferSlice b,
                          BufferSlice y, float scale = 1.0f, DType act = DType::f32);
// da[i] (=|+=) dy[i], db[i] (=|+=) scale·dy[i], each by its own flag. da and db must not overlap.
// Variants as the forward's.
Dispatch residual_backward(const DeviceQuirks& quirks, uint32_t count, BufferSlice dy,
                           BufferSlice da, BufferSlice db, bool accumulate_a, bool accumulate_b,
                           float scale = 1.0f);

}  // namespace remat::kernels
