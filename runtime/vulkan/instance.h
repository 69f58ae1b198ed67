// The Vulkan instance with its function table. remat's own (create) finds the system loader,
// optionally enables the Khronos validation layer and collects every validation message so tests
// can fail on them; an application's (wrap) is only borrowed.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/device_profiles.h"
#include "runtime/vulkan/functions.h"

namespace remat {

struct InstanceOptions {
  // Enable VK_LAYER_KHRONOS_validation. Default: on when REMAT_VALIDATION=1 is set.
  bool validation = false;
  // Every snapshot acts within this device profile (runtime/vulkan/device_profiles.h); empty for
  // none. Default: REMAT_DEVICE_PROFILE. An unknown name is std::invalid_argument.
  std::string device_profile;
  static InstanceOptions from_environment();
};

class Instance {
 public:
  // Throws VulkanError naming the Debian packages when no loader or driver is present.
  static std::shared_ptr<Instance> create(const InstanceOptions& options);
  // An application's instance, reached through its `get` (the loader's or a layer's
  // vkGetInstanceProcAddr). remat never destroys it and records no validation messages for it.
  // Its snapshots act within `device_profile` (empty: none).
  static std::shared_ptr<Instance> wrap(PFN_vkGetInstanceProcAddr get, VkInstance instance,
                                        std::string_view device_profile = {});
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  const InstanceFunctions& vk() const { return vk_; }
  bool owned() const { return owned_; }  // created (and destroyed) by remat
  uint32_t api_version() const { return api_version_; }
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }

  std::vector<VkPhysicalDevice> physical_devices() const;
  // The device as remat sees it: within the instance's device profile where one is set.
  PhysicalDeviceSnapshot snapshot(VkPhysicalDevice pd, uint32_t index) const;
  const DeviceProfile* device_profile() const { return profile_; }
  std::vector<PhysicalDeviceSnapshot> snapshots() const;

  // Validation warnings and errors seen so far (thread-safe).
  std::vector<std::string> validation_messages() const;
  std::size_t validation_message_count() const;
  void record_validation_message(std::string msg);

 private:
  Instance() = default;
  InstanceFunctions vk_;
  VkInstance instance_ = VK_NULL_HANDLE;
  bool owned_ = false;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  uint32_t api_version_ = 0;
  const DeviceProfile* profile_ = nullptr;
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

}  // namespace remat
