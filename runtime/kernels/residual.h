// Dispatches for the residual connection y = a + b and its gradient routing.
#pragma once

#include "runtime/executor.h"
#include "runtime/kernels/act_variant.h"

namespace remat::kernels {

// y[i] = a[i] + scale·b[i] for i < count; a, b and y stored as `act`.
Dispatch residual_forward(uint32_t count, BufferSlice a, BufferSlice b, BufferSlice y,
                          float scale = 1.0f, DType act = DType::f32);
// da[i] (=|+=) dy[i], db[i] (=|+=) scale·dy[i], each by its own flag. da and db must not overlap.
Dispatch residual_backward(uint32_t count, BufferSlice dy, BufferSlice da, BufferSlice db,
                           bool accumulate_a, bool accumulate_b, float scale = 1.0f);

}  // namespace remat::kernels
