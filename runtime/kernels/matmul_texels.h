// Texel-fetch matmul variants for drivers where texelFetch is far cheaper than a storage-buffer
// load (DeviceQuirks::texel_fetch_beats_storage_loads: llvmpipe). They compute exactly what
// matmul_forward / matmul_backward_input / matmul_backward_weight compute, with the same fma
// order, so they give the same bits; each returns nullopt where the shape, the strides of a
// piece, or the quirk rule it out, and the caller falls back to the storage-buffer kernels.
// Register tiles come from quirks.matmul_tiling by shape class (runtime/vulkan/matmul_tiles.h).
#pragma once

#include <optional>

#include "runtime/kernels/matmul.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"
#include "runtime/vulkan/matmul_tiles.h"

namespace remat::kernels {

// out[M,N] = inp[M,K] · W + bias (bias may be {}); with `residual` (f32 [M,N], out f32 and whole)
// out = residual + (inp · W + bias) in one dispatch, or nullopt where that is not fused here.
std::optional<Dispatch> matmul_forward_texels(const DeviceQuirks& quirks, const MatmulShape& s,
                                              BufferSlice inp, BufferSlice w, BufferSlice bias,
                                              BufferSlice out, BufferSlice residual = {});

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

// matmul_backward_weight_texels with dbias (+)= Σ_m dout[m, :] summed in the same dispatch (one
// more row of workgroups; matmul_backward_bias's order, so its bits), where W is in_out and the
// texel variant applies to whole rows of dout; nullopt otherwise. `bias_accumulate` 0 or 1.
std::optional<Dispatch> matmul_backward_weight_bias_texels(const DeviceQuirks& quirks,
                                                           const MatmulShape& s, BufferSlice dout,
                                                           BufferSlice inp, BufferSlice dw,
                                                           uint32_t accumulate, BufferSlice dbias,
                                                           uint32_t bias_accumulate);

// A texel matmul dispatch's shape class and extents, read back from what the functions above
// built; nullopt for any other kernel. What runtime/matmul_tuning times tiles for.
struct TexelMatmulUse {
  MatmulClass cls;
  uint32_t I = 0, J = 0, R = 0;  // output rows and columns, reduction length
};
std::optional<TexelMatmulUse> texel_matmul_use(const Dispatch& d);

// A dense problem of cls's kernel and fetch mode at about I x J x R (rounded to what the mode
// needs: multiples of 4, or odd strides for the scalar and shifted modes), to time tiles on.
struct MatmulProbe {
  MatmulClass cls;
  uint32_t I = 0, J = 0, R = 0;
  uint64_t x_floats = 0, y_floats = 0, c_floats = 0;  // the three buffers' sizes
};
MatmulProbe matmul_probe(const MatmulClass& cls, uint32_t I, uint32_t J, uint32_t R);
// The probe computed with tile `t` (which must fit the mode) on buffers of the probe's sizes,
// X shared across `shared_x_lanes` lanes where the tile allows (MatmulTiling::shared_x_lanes).
Dispatch matmul_probe_dispatch(const MatmulProbe& p, const MatmulTile& t, uint32_t shared_x_lanes,
                               BufferSlice x, BufferSlice y, BufferSlice c);

}  // namespace remat::kernels
