#include "runtime/vulkan/texel_format.h"

namespace remat {

uint32_t texel_format_bytes(VkFormat f) {
  switch (f) {
    case VK_FORMAT_R32G32B32A32_SFLOAT:
    case VK_FORMAT_R32G32B32A32_UINT:
      return 16;
    case VK_FORMAT_R16G16B16A16_SFLOAT:
    case VK_FORMAT_R16G16B16A16_UINT:
      return 8;
    case VK_FORMAT_R32_SFLOAT:
    case VK_FORMAT_R32_UINT:
      return 4;
    case VK_FORMAT_R16_SFLOAT:
    case VK_FORMAT_R16_UINT:
      return 2;
    default:
      return 0;
  }
}

}  // namespace remat
