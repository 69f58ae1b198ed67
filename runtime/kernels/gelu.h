// Dispatches for GELU, the tanh approximation GPT-2 uses.
#pragma once

#include "runtime/executor.h"

namespace remat::kernels {

// y[i] = gelu(x[i]) for i < count.
Dispatch gelu_forward(uint32_t count, BufferSlice x, BufferSlice y);
// dx[i] = (accumulate ? dx[i] : 0) + dy[i] * gelu'(x[i]).
Dispatch gelu_backward(uint32_t count, BufferSlice dy, BufferSlice x, BufferSlice dx,
                       bool accumulate);

}  // namespace remat::kernels
