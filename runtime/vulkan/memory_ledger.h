// The one accounting point for device memory: every vkAllocateMemory/vkFreeMemory in remat goes
// through MemoryLedger, so "bytes allocated" is measured, not estimated, and can be compared with
// the plan (planned == measured is a test).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "runtime/vulkan/functions.h"

namespace remat {

enum class MemoryCategory : uint8_t {
  persistent,  // parameters, gradients, optimizer state, inputs: live for the whole session
  arena,       // the one activation arena (plus its chunks)
  staging,     // host-visible upload/readback buffers
  scratch,     // small fixed extras (dummy bindings, timestamp readback)
  count_
};
std::string_view memory_category_name(MemoryCategory c);

struct MemoryStats {
  std::array<uint64_t, static_cast<std::size_t>(MemoryCategory::count_)> live_bytes{};
  uint64_t total_live_bytes = 0;  // sum over categories now
  uint64_t peak_total_bytes = 0;  // high-water mark of total_live_bytes
  uint64_t allocation_count = 0;  // live vkDeviceMemory objects
  uint64_t bytes(MemoryCategory c) const { return live_bytes[static_cast<std::size_t>(c)]; }
};

class MemoryLedger {
 public:
  // Allocates `bytes` of memory type `type_index`. `what` names the allocation in errors, e.g.
  // "arena of 48.00 MiB"; `vk` is `device`'s function table. Throws VulkanError with the device
  // name and the size on failure.
  VkDeviceMemory allocate(const DeviceFunctions& vk, VkDevice device, uint64_t bytes,
                          uint32_t type_index, MemoryCategory cat, const std::string& what,
                          const void* pnext = nullptr);
  void free(const DeviceFunctions& vk, VkDevice device, VkDeviceMemory memory, uint64_t bytes,
            MemoryCategory cat);
  MemoryStats stats() const;
  void set_device_name(std::string name) { device_name_ = std::move(name); }

 private:
  mutable std::mutex mutex_;
  MemoryStats stats_;
  std::string device_name_;
};

}  // namespace remat
