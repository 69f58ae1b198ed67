#include "runtime/kernels/vec4_texels.h"

namespace remat::kernels {

Binding vec4_texels(BufferSlice s, uint64_t count) {
  return {{s.buffer, s.offset, count * sizeof(float)}, false, VK_FORMAT_R32G32B32A32_SFLOAT};
}

bool vec4_texels_apply(const DeviceQuirks& quirks, std::initializer_list<BufferSlice> operands,
                       uint64_t count) {
  if (!quirks.texel_fetch_beats_storage_loads || count == 0 || count % 4 != 0) return false;
  for (const BufferSlice& s : operands)
    if (s.offset % kTexelAlignment != 0 || s.size < count * sizeof(float)) return false;
  return true;
}

}  // namespace remat::kernels
