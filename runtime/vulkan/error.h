// Errors from Vulkan calls, carrying the call, the result's name and what remat was doing.
#pragma once

#include <stdexcept>
#include <string>

#include <vulkan/vulkan_core.h>

namespace remat {

// Thrown for any failed Vulkan call or unusable device. what() reads like
// "allocating arena of 3.2 GiB on llvmpipe: vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY".
class VulkanError : public std::runtime_error {
 public:
  VulkanError(std::string message, VkResult result)
      : std::runtime_error(std::move(message)), result_(result) {}
  VkResult result() const { return result_; }

 private:
  VkResult result_;
};

const char* vk_result_name(VkResult r);

// Throws VulkanError unless r is VK_SUCCESS. `context` says what remat was doing.
void vk_check(VkResult r, const char* call, const std::string& context = {});

}  // namespace remat
