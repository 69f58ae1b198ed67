// Dispatches for LayerNorm (eps 1e-5, biased variance, as GPT-2 / torch.nn.LayerNorm).
#pragma once

#include "runtime/kernels/act_variant.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

struct LayernormShape {
  uint32_t rows = 0;  // BT
  uint32_t C = 0;
  float eps = 1e-5f;
};

// y[rows,C] = (x - mean) * rstd * w + b; also writes mean[rows] and rstd[rows]. CPU drivers
// (quirks.texel_fetch_beats_storage_loads) read the inputs through texel views, four channels per
// fetch where C is a multiple of 4 and the slices start on texel boundaries; same bits. x and y
// stored as `act` (16-bit: storage buffers).
Dispatch layernorm_forward(const DeviceQuirks& quirks, const LayernormShape& s, BufferSlice x,
                           BufferSlice w, BufferSlice b, BufferSlice y, BufferSlice mean,
                           BufferSlice rstd, DType act = DType::f32);

// dx[rows,C], dw[C], db[C]. accumulate_dx: dx += instead of =; accumulate_dw: the same for both
// dw and db. One dispatch: its rows and channel reductions are independent. A frozen weight
// (dw and db empty slices) dispatches the row invocations alone: dx only. CPU drivers read
// through texel views, four channels per fetch where C is a multiple of 4 and the slices start
// on texel boundaries (layernorm_backward_vec4_texels.comp); the same bits in every variant.
Dispatch layernorm_backward(const DeviceQuirks& quirks, const LayernormShape& s, BufferSlice dy,
                            BufferSlice x, BufferSlice w, BufferSlice mean, BufferSlice rstd,
                            BufferSlice dx, BufferSlice dw, BufferSlice db, bool accumulate_dx,
                            bool accumulate_dw, DType act = DType::f32);

}  // namespace remat::kernels
