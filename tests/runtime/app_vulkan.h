// An application that owns Vulkan before remat arrives: its own volk (global function pointers,
// loaded by volk, not by remat), an instance with the validation layer when it is installed, and
// a device with one compute queue. Tests hand it to Device::wrap.
#pragma once

#include <string>
#include <vector>

#include <volk.h>

#include "runtime/vulkan/device.h"

namespace remat::test {

class AppVulkan {
 public:
  AppVulkan();  // REQUIREs every step (a test without a device has nothing to check)
  ~AppVulkan() { destroy(); }
  AppVulkan(const AppVulkan&) = delete;
  AppVulkan& operator=(const AppVulkan&) = delete;

  ExternalVulkan external() const;
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  uint32_t family() const { return family_; }
  // Whether the device works: waits for it idle, then creates and destroys a buffer.
  bool device_usable() const;
  // Destroys the device and the instance (the validation layer reports any remat object left on
  // the device here). Idempotent.
  void destroy();
  // Validation messages of this instance so far; always empty without the layer.
  const std::vector<std::string>& messages() const { return messages_; }
  bool validation() const { return messenger_ != VK_NULL_HANDLE; }

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  std::vector<std::string> messages_;
};

}  // namespace remat::test
