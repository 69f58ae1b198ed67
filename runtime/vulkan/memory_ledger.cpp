#include "runtime/vulkan/memory_ledger.h"

#include <algorithm>
#include <cstdio>

#include "runtime/vulkan/error.h"

namespace remat {

std::string_view memory_category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::persistent:
      return "persistent";
    case MemoryCategory::arena:
      return "arena";
    case MemoryCategory::staging:
      return "staging";
    case MemoryCategory::scratch:
      return "scratch";
    case MemoryCategory::count_:
      break;
  }
  return "unknown";
}

namespace {
std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / (1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", double(b) / (1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}
}  // namespace

VkDeviceMemory MemoryLedger::allocate(const DeviceFunctions& vk, VkDevice device, uint64_t bytes,
                                      uint32_t type_index, MemoryCategory cat,
                                      const std::string& what, const void* pnext) {
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = pnext;
  ai.allocationSize = bytes;
  ai.memoryTypeIndex = type_index;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  vk_check(vk.vkAllocateMemory(device, &ai, nullptr, &mem), "vkAllocateMemory",
           "allocating " + what + " (" + human_bytes(bytes) + ") on " + device_name_);
  std::lock_guard lock(mutex_);
  stats_.live_bytes[static_cast<std::size_t>(cat)] += bytes;
  stats_.total_live_bytes += bytes;
  stats_.peak_total_bytes = std::max(stats_.peak_total_bytes, stats_.total_live_bytes);
  ++stats_.allocation_count;
  return mem;
}

void MemoryLedger::free(const DeviceFunctions& vk, VkDevice device, VkDeviceMemory memory,
                        uint64_t bytes, MemoryCategory cat) {
  if (memory == VK_NULL_HANDLE) return;
  vk.vkFreeMemory(device, memory, nullptr);
  std::lock_guard lock(mutex_);
  stats_.live_bytes[static_cast<std::size_t>(cat)] -= bytes;
  stats_.total_live_bytes -= bytes;
  --stats_.allocation_count;
}

MemoryStats MemoryLedger::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace remat
