// Dispatches for GELU, the tanh approximation GPT-2 uses.
#pragma once

#include "runtime/executor.h"
#include "runtime/kernels/act_variant.h"

namespace remat::kernels {

// y[i] = gelu(x[i]) for i < count; x and y stored as `act`.
Dispatch gelu_forward(uint32_t count, BufferSlice x, BufferSlice y, DType act = DType::f32);
// dx[i] = (accumulate ? dx[i] : 0) + dy[i] * gelu'(x[i]); x stored as `act`.
Dispatch gelu_backward(uint32_t count, BufferSlice dy, BufferSlice x, BufferSlice dx,
                       bool accumulate, DType act = DType::f32);

}  // namespace remat::kernels
