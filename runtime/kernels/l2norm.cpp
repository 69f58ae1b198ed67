#include "runtime/kernels/l2norm.h"

#include "l2norm_params.h"

namespace remat::kernels {

namespace {
// Small groups, as RMSNorm's: each invocation loops over a whole row.
constexpr uint32_t kGroup = 32;

push::L2normParams params(const L2normShape& s, GradWrite mode) {
  return {s.tokens, s.heads, s.D, s.stride, s.offset, s.eps, s.scale, static_cast<uint32_t>(mode)};
}
}  // namespace

Dispatch l2norm_forward(const L2normShape& s, BufferSlice x, BufferSlice y) {
  Dispatch d;
  d.kernel = KernelId::l2norm_forward;
  d.spec = {kGroup};
  d.bindings = {{x, false}, {y, true}};
  d.push = push_bytes(params(s, GradWrite::overwrite));
  d.groups = {grid_stride_groups(uint64_t(s.tokens) * s.heads, kGroup), 1, 1};
  d.label = "l2norm_forward";
  return d;
}

Dispatch l2norm_backward(const L2normShape& s, BufferSlice dy, BufferSlice x, BufferSlice dx,
                         GradWrite mode) {
  Dispatch d;
  d.kernel = KernelId::l2norm_backward;
  d.spec = {kGroup};
  d.bindings = {{dy, false}, {x, false}, {dx, true}};
  d.push = push_bytes(params(s, mode));
  d.groups = {grid_stride_groups(uint64_t(s.tokens) * s.heads, kGroup), 1, 1};
  d.label = "l2norm_backward";
  return d;
}

}  // namespace remat::kernels
