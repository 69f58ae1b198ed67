// A Vulkan logical device opened from a DevicePlan: one compute queue, one command pool, the
// memory ledger every allocation goes through, and one-shot submissions for uploads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <volk.h>

#include "runtime/device_plan.h"
#include "runtime/instance.h"
#include "runtime/memory_ledger.h"

namespace remat {

class Device {
 public:
  // Opens the device chosen by `selector` (index or name substring); empty means the
  // REMAT_DEVICE environment variable, else the default order of choose_device().
  static std::unique_ptr<Device> open(std::string_view selector = {},
                                      const InstanceOptions& options = InstanceOptions::from_environment());
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  const PhysicalDeviceSnapshot& info() const { return info_; }
  const DevicePlan& plan() const { return plan_; }
  Instance& instance() const { return *instance_; }
  MemoryLedger& ledger() { return ledger_; }

  // A memory type with all `required` flags, preferring one that also has `preferred`.
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                       VkMemoryPropertyFlags preferred = 0) const;

  // Records with `record` into a fresh command buffer, submits it and waits.
  void submit_and_wait(const std::function<void(VkCommandBuffer)>& record);
  // Submits already-recorded command buffers and waits for them.
  void submit_and_wait(VkCommandBuffer cb);

  VkCommandPool command_pool() const { return pool_; }

  // One line: "llvmpipe (LLVM 15.0.6, 256 bits) [cpu, Vulkan 1.3.230, Mesa 22.3.6]; subgroup 8 ..."
  std::string summary() const;

 private:
  Device() = default;
  std::shared_ptr<Instance> instance_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_props_{};
  PhysicalDeviceSnapshot info_;
  DevicePlan plan_;
  MemoryLedger ledger_;
};

}  // namespace remat
