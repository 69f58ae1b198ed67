#include "runtime/kernels/roofline.h"

#include <algorithm>
#include <stdexcept>

#include "roofline_params.h"

namespace remat::kernels {

namespace {
constexpr uint32_t kGroup = 256;
}  // namespace

Dispatch peak_fma(uint32_t count, uint32_t iterations, float a, float b, BufferSlice out) {
  if (count == 0) throw std::invalid_argument("peak_fma: count must be positive");
  if (out.size < uint64_t(count) * 4) throw std::invalid_argument("peak_fma: output too small");
  Dispatch d;
  d.kernel = KernelId::peak_fma;
  d.spec = {kGroup};
  d.bindings = {{out, true}};
  d.push = push_bytes(push::PeakFmaParams{count, iterations, a, b});
  d.groups = {div_up(count, kGroup), 1, 1};
  d.label = "peak_fma";
  return d;
}

double peak_fma_flops(uint32_t count, uint32_t iterations) {
  return 2.0 * double(count) * double(iterations) * double(kPeakFmaStepsPerIteration);
}

Dispatch peak_copy(uint32_t count, BufferSlice src, BufferSlice dst) {
  if (count == 0) throw std::invalid_argument("peak_copy: count must be positive");
  if (src.size < uint64_t(count) * 16 || dst.size < uint64_t(count) * 16)
    throw std::invalid_argument("peak_copy: buffers too small");
  Dispatch d;
  d.kernel = KernelId::peak_copy;
  d.spec = {kGroup};
  d.bindings = {{src, false}, {dst, true}};
  d.push = push_bytes(push::PeakCopyParams{count});
  // Grid-stride loop: 65535 groups is the Vulkan minimum of maxComputeWorkGroupCount.
  d.groups = {grid_stride_groups(count, kGroup), 1, 1};
  d.label = "peak_copy";
  return d;
}

double peak_copy_bytes(uint32_t count) {
  return 32.0 * double(count);
}

}  // namespace remat::kernels
