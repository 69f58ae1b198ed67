#include "runtime/vulkan/error.h"

namespace remat {

const char* vk_result_name(VkResult r) {
  switch (r) {
#define REMAT_CASE(x) \
  case x:             \
    return #x;
    REMAT_CASE(VK_SUCCESS)
    REMAT_CASE(VK_NOT_READY)
    REMAT_CASE(VK_TIMEOUT)
    REMAT_CASE(VK_EVENT_SET)
    REMAT_CASE(VK_EVENT_RESET)
    REMAT_CASE(VK_INCOMPLETE)
    REMAT_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    REMAT_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    REMAT_CASE(VK_ERROR_INITIALIZATION_FAILED)
    REMAT_CASE(VK_ERROR_DEVICE_LOST)
    REMAT_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    REMAT_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    REMAT_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    REMAT_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    REMAT_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    REMAT_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    REMAT_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    REMAT_CASE(VK_ERROR_FRAGMENTED_POOL)
    REMAT_CASE(VK_ERROR_UNKNOWN)
    REMAT_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    REMAT_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    REMAT_CASE(VK_ERROR_FRAGMENTATION)
    REMAT_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
#undef REMAT_CASE
    default:
      return "VK_RESULT_UNKNOWN";
  }
}

void vk_check(VkResult r, const char* call, const std::string& context) {
  if (r == VK_SUCCESS) return;
  std::string msg = context.empty() ? std::string() : context + ": ";
  msg += call;
  msg += ": ";
  msg += vk_result_name(r);
  throw VulkanError(msg, r);
}

}  // namespace remat
