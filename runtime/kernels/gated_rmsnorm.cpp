#include "runtime/kernels/gated_rmsnorm.h"

#include <algorithm>

#include "gated_rmsnorm_params.h"

namespace remat::kernels {

namespace {
// Small groups, as RMSNorm's: each invocation loops over a whole row.
constexpr uint32_t kGroup = 32;

push::GatedRmsnormParams params(const GatedRmsnormShape& s, GradWrite a, GradWrite b, GradWrite c) {
  return {s.rows,
          s.D,
          s.eps,
          static_cast<uint32_t>(a),
          static_cast<uint32_t>(b),
          static_cast<uint32_t>(c)};
}
}  // namespace

Dispatch gated_rmsnorm_forward(const GatedRmsnormShape& s, BufferSlice o, BufferSlice z,
                               BufferSlice w, BufferSlice y, BufferSlice rstd) {
  Dispatch d;
  d.kernel = KernelId::gated_rmsnorm_forward;
  d.spec = {kGroup};
  d.bindings = {{o, false}, {z, false}, {w, false}, {y, true}, {rstd, true}};
  const auto ow = GradWrite::overwrite;
  d.push = push_bytes(params(s, ow, ow, ow));
  d.groups = {grid_stride_groups(s.rows, kGroup), 1, 1};
  d.label = "gated_rmsnorm_forward";
  return d;
}

Dispatch gated_rmsnorm_backward(const GatedRmsnormShape& s, BufferSlice dy, BufferSlice o,
                                BufferSlice z, BufferSlice w, BufferSlice rstd, BufferSlice d_o,
                                BufferSlice dz, GradWrite do_mode, GradWrite dz_mode) {
  Dispatch d;
  d.kernel = KernelId::gated_rmsnorm_backward;
  d.spec = {kGroup};
  d.bindings = {{dy, false},   {o, false},  {z, false}, {w, false},
                {rstd, false}, {d_o, true}, {dz, true}};
  d.push = push_bytes(params(s, do_mode, dz_mode, GradWrite::overwrite));
  d.groups = {grid_stride_groups(s.rows, kGroup), 1, 1};
  d.label = "gated_rmsnorm_backward";
  return d;
}

Dispatch gated_rmsnorm_backward_weight(const GatedRmsnormShape& s, BufferSlice dy, BufferSlice o,
                                       BufferSlice z, BufferSlice rstd, BufferSlice dw,
                                       GradWrite mode) {
  Dispatch d;
  d.kernel = KernelId::gated_rmsnorm_backward_weight;
  // A constant of the kernel, never a device choice: it decides the summation order.
  d.spec = {GATED_RMSNORM_WEIGHT_GROUP};
  d.bindings = {{dy, false}, {o, false}, {z, false}, {rstd, false}, {dw, true}};
  const auto ow = GradWrite::overwrite;
  d.push = push_bytes(params(s, ow, ow, mode));
  d.groups = {std::clamp<uint32_t>(s.D, 1, 65535), 1, 1};
  d.label = "gated_rmsnorm_backward_weight";
  return d;
}

}  // namespace remat::kernels
