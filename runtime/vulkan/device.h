// A Vulkan logical device, opened by remat from a DevicePlan or borrowed from an application: one
// compute queue, its function table, one command pool, the memory ledger every allocation goes
// through, and one-shot submissions for uploads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <vulkan/vulkan_core.h>

#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/functions.h"
#include "runtime/vulkan/instance.h"
#include "runtime/vulkan/memory_ledger.h"

namespace remat {

// Vulkan objects an application already owns, for remat to run on (Device::wrap). They must outlive
// the remat Device. The queue must belong to `queue_family_index` of `device`, and the application
// must not use it from another thread while a remat call submits to it (Vulkan requires queue
// submissions to be serialized). The instance must be Vulkan 1.1 or newer.
struct ExternalVulkan {
  PFN_vkGetInstanceProcAddr get_instance_proc_addr;  // the application's loader (or a layer's)
  VkInstance instance;
  VkPhysicalDevice physical_device;
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family_index;
};

// Calls `wait` (one bounded fence wait) until it returns anything but VK_TIMEOUT, or until a
// timed-out wait saw no change in `progress` (empty: the first timeout ends it); returns the last
// result.
VkResult wait_while_progressing(const std::function<VkResult()>& wait,
                                const std::function<uint64_t()>& progress);

class Device {
 public:
  // Opens the device chosen by `selector` (index or name substring); empty means the
  // REMAT_DEVICE environment variable, else the default order of choose_device().
  static std::unique_ptr<Device> open(
      std::string_view selector = {},
      const InstanceOptions& options = InstanceOptions::from_environment());
  // Runs on an application's device: remat creates its command pool, fences, buffers and
  // pipelines there and destroys only those; the instance and device stay the application's.
  // The snapshot and plan come from the physical device (within REMAT_DEVICE_PROFILE's profile
  // where it is set); the plan enables nothing (the device exists already), and validation
  // messages are not collected. std::invalid_argument for a null
  // handle, a physical device the instance does not list, or a queue family without compute.
  static std::unique_ptr<Device> wrap(const ExternalVulkan& external);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkDevice handle() const { return device_; }
  const DeviceFunctions& vk() const { return vk_; }
  bool owned() const { return owned_; }  // created (and destroyed) by remat
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
  // Submits already-recorded command buffers and waits for them. `progress`, when given, counts
  // what the submission has finished so far (Executor's markers): a wait times out only when
  // the count stays the same for a whole wait, so a long step that keeps going is not taken
  // for a hung device; without it the whole submission must finish within one wait.
  void submit_and_wait(VkCommandBuffer cb, const std::function<uint64_t()>& progress = {});
  // True while a submission whose wait timed out may still run (checked without waiting):
  // nothing it uses may be freed then; destructors leave such objects to the process's end.
  bool work_in_flight();
  // After a wait that timed out, waits once more (as long again) for that submission: true when
  // none of remat's work is in flight. Whatever it uses may be freed only then; the next
  // submission calls it first, so a device that was slow, not hung, goes on working.
  bool finish_timed_out_work();
  // How long one wait lasts before it reports the device as making no progress (600 s; tests
  // shorten it to make a wait time out).
  void set_wait_timeout_ns(uint64_t ns) { wait_timeout_ns_ = ns; }

  VkCommandPool command_pool() const { return pool_; }

  // One line: "llvmpipe (LLVM 15.0.6, 256 bits) [cpu, Vulkan 1.3.230, Mesa 22.3.6]; subgroup 8 ..."
  std::string summary() const;

 private:
  Device() = default;
  void adopt_physical(VkPhysicalDevice physical, const PhysicalDeviceSnapshot& info);
  void create_pool_and_fence();

  std::shared_ptr<Instance> instance_;
  DeviceFunctions vk_;
  bool owned_ = false;
  bool in_flight_ = false;  // a submission has not been waited for (a timed-out wait)
  uint64_t wait_timeout_ns_ = 600ull * 1000 * 1000 * 1000;  // a hung device is reported
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
