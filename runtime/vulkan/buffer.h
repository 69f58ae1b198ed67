// Device buffers: persistent storage, the arena, and host-visible staging. Each owns its
// memory, allocated through the device's MemoryLedger.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "runtime/vulkan/device.h"

namespace remat {

// A byte range of a VkBuffer, as bound to a shader.
struct BufferSlice {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t offset = 0;  // bytes from the start of `buffer`
  uint64_t size = 0;    // bytes
};

class Buffer {
 public:
  // Device-local storage buffer (host-visible when `host_visible`, as staging needs).
  Buffer(Device& device, uint64_t bytes, MemoryCategory category, std::string name,
         bool host_visible = false);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&&) = delete;
  Buffer(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  uint64_t size() const { return size_; }
  uint64_t allocated_bytes() const { return allocated_; }  // what the driver asked for (>= size)
  const std::string& name() const { return name_; }
  BufferSlice slice(uint64_t offset, uint64_t bytes) const;
  BufferSlice whole() const { return {buffer_, 0, size_}; }
  void* mapped() const { return mapped_; }  // non-null only for host-visible buffers

 private:
  Device* device_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint64_t size_ = 0;
  uint64_t allocated_ = 0;
  MemoryCategory category_;
  std::string name_;
  void* mapped_ = nullptr;
};

// The bytes the driver would allocate for a Buffer of `bytes` (vkGetBufferMemoryRequirements of
// a buffer created and destroyed for the question), without allocating any.
uint64_t allocation_bytes(Device& device, uint64_t bytes);

// Copies host bytes into `dst` at `offset` through a staging buffer of at most
// Staging::kDefaultBytes (runtime/vulkan/staging.h), piece by piece, and waits. The copy is visible
// to every later submission's compute shaders.
void upload(Device& device, const Buffer& dst, uint64_t offset, const void* data, uint64_t bytes);
void download(Device& device, const Buffer& src, uint64_t offset, void* data, uint64_t bytes);

template <class T>
void upload(Device& device, const Buffer& dst, std::span<const T> values, uint64_t offset = 0) {
  upload(device, dst, offset, values.data(), values.size_bytes());
}
template <class T>
std::vector<T> download(Device& device, const Buffer& src, std::size_t count, uint64_t offset = 0) {
  std::vector<T> out(count);
  download(device, src, offset, out.data(), count * sizeof(T));
  return out;
}

}  // namespace remat
