// Dispatches for the matmul kernels (Linear layers and the tied LM head).
#pragma once

#include "runtime/device_plan.h"
#include "runtime/executor.h"

namespace remat::kernels {

enum class WeightLayout : uint32_t { in_out = 0, out_in = 1 };  // [K,N] or [N,K]

struct MatmulShape {
  uint32_t M = 0, N = 0, K = 0;
  WeightLayout layout = WeightLayout::in_out;
};

// out[M,N] = inp[M,K] · W + bias. `bias` may be {} (no bias); a dummy binding is then made
// from `w`, which the kernel never reads.
Dispatch matmul_forward(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice inp,
                        BufferSlice w, BufferSlice bias, BufferSlice out);

}  // namespace remat::kernels
