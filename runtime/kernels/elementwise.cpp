#include "runtime/kernels/elementwise.h"

#include "push_constants.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
}

Dispatch fill(BufferSlice dst, uint32_t count, float value) {
  Dispatch d;
  d.kernel = KernelId::fill;
  d.spec = {kGroup};
  d.bindings = {{dst, true}};
  d.push = push_bytes(push::FillParams{count, value});
  d.groups = {div_up(count, kGroup), 1, 1};
  d.label = "fill";
  return d;
}

Dispatch copy(BufferSlice src, BufferSlice dst, uint32_t count, uint32_t src_offset,
              uint32_t dst_offset) {
  Dispatch d;
  d.kernel = KernelId::copy;
  d.spec = {kGroup};
  d.bindings = {{src, false}, {dst, true}};
  d.push = push_bytes(push::CopyParams{count, src_offset, dst_offset});
  d.groups = {div_up(count, kGroup), 1, 1};
  d.label = "copy";
  return d;
}

}  // namespace remat::kernels
