// Texel-fetch matmul variants for drivers where texelFetch is far cheaper than a storage-buffer
// load (DeviceQuirks::texel_fetch_beats_storage_loads: llvmpipe). They compute exactly what
// matmul_forward / matmul_backward_input / matmul_backward_weight compute, with the same fma
// order, so they give the same bits; each returns nullopt where the shape, the strides of a
// piece, or the quirk rule it out, and the caller falls back to the storage-buffer kernels.
#pragma once

#include <optional>

#include "runtime/device_plan.h"
#include "runtime/executor.h"
#include "runtime/kernels/matmul.h"

namespace remat::kernels {

// out[M,N] = inp[M,K] · W + bias (bias may be {}).
std::optional<Dispatch> matmul_forward_texels(const DeviceQuirks& quirks, const MatmulShape& s,
                                              BufferSlice inp, BufferSlice w, BufferSlice bias,
                                              BufferSlice out);

// dinp[M,K] (+)= dout · W^T. `accumulate` is MatmulBackwardParams.accumulate: 0 overwrite, 1 add,
// 2 continue the sum an earlier piece began.
std::optional<Dispatch> matmul_backward_input_texels(const DeviceQuirks& quirks,
                                                     const MatmulShape& s, BufferSlice dout,
                                                     BufferSlice w, BufferSlice dinp,
                                                     uint32_t accumulate);

// dW (+)= inp^T · dout in W's layout; `accumulate` 0 overwrite, 1 add.
std::optional<Dispatch> matmul_backward_weight_texels(const DeviceQuirks& quirks,
                                                      const MatmulShape& s, BufferSlice dout,
                                                      BufferSlice inp, BufferSlice dw,
                                                      uint32_t accumulate);

}  // namespace remat::kernels
