#include "runtime/vulkan/buffer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "runtime/vulkan/error.h"
#include "runtime/vulkan/staging.h"

namespace remat {

namespace {

// Every remat buffer is created alike, so a buffer made only to ask its memory requirements
// answers for the real one.
VkBuffer create_buffer(Device& device, uint64_t bytes, const std::string& name) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = bytes;
  // Uniform-texel usage lets kernels read a slice through a texel view (see DeviceQuirks).
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
              VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  vk_check(device.vk().vkCreateBuffer(device.handle(), &bci, nullptr, &buffer), "vkCreateBuffer",
           "creating " + name);
  return buffer;
}

}  // namespace

uint64_t allocation_bytes(Device& device, uint64_t bytes) {
  const VkBuffer buffer = create_buffer(device, bytes, "a buffer to size");
  VkMemoryRequirements req{};
  device.vk().vkGetBufferMemoryRequirements(device.handle(), buffer, &req);
  device.vk().vkDestroyBuffer(device.handle(), buffer, nullptr);
  return req.size;
}

Buffer::Buffer(Device& device, uint64_t bytes, MemoryCategory category, std::string name,
               bool host_visible)
    : device_(&device), size_(bytes), category_(category), name_(std::move(name)) {
  if (bytes == 0) throw std::invalid_argument("buffer '" + name_ + "' has zero size");
  VkDevice dev = device.handle();
  buffer_ = create_buffer(device, bytes, name_);
  VkMemoryRequirements req{};
  device.vk().vkGetBufferMemoryRequirements(dev, buffer_, &req);
  const VkMemoryPropertyFlags required =
      host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
  const VkMemoryPropertyFlags preferred =
      host_visible ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  try {
    const uint32_t type = device.memory_type(req.memoryTypeBits, required, preferred);
    allocated_ = req.size;
    memory_ = device.ledger().allocate(device.vk(), dev, req.size, type, category, name_);
    vk_check(device.vk().vkBindBufferMemory(dev, buffer_, memory_, 0), "vkBindBufferMemory", name_);
    if (host_visible)
      vk_check(device.vk().vkMapMemory(dev, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory",
               name_);
  } catch (...) {
    device.ledger().free(device.vk(), dev, memory_, allocated_, category_);
    device.vk().vkDestroyBuffer(dev, buffer_, nullptr);
    throw;
  }
}

Buffer::Buffer(Buffer&& o) noexcept
    : device_(o.device_),
      buffer_(o.buffer_),
      memory_(o.memory_),
      size_(o.size_),
      allocated_(o.allocated_),
      category_(o.category_),
      name_(std::move(o.name_)),
      mapped_(o.mapped_) {
  o.buffer_ = VK_NULL_HANDLE;
  o.memory_ = VK_NULL_HANDLE;
  o.mapped_ = nullptr;
}

Buffer::~Buffer() {
  if (!buffer_) return;
  // Work still running on the device (a timed-out wait) may read or write it: freed memory under
  // a CPU driver's threads is a crash, so it is left to the process's end.
  if (device_->work_in_flight()) return;
  VkDevice dev = device_->handle();
  if (mapped_) device_->vk().vkUnmapMemory(dev, memory_);
  device_->vk().vkDestroyBuffer(dev, buffer_, nullptr);
  device_->ledger().free(device_->vk(), dev, memory_, allocated_, category_);
}

BufferSlice Buffer::slice(uint64_t offset, uint64_t bytes) const {
  if (offset > size_ || bytes > size_ - offset)
    throw std::out_of_range("slice [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                            ") is outside buffer '" + name_ + "' of " + std::to_string(size_) +
                            " bytes");
  return {buffer_, offset, bytes};
}

void upload(Device& device, const Buffer& dst, uint64_t offset, const void* data, uint64_t bytes) {
  const BufferSlice to = dst.slice(offset, bytes);
  if (bytes == 0) return;
  Staging staging(device, std::min(bytes, Staging::kDefaultBytes));
  staging.upload(to, [&](std::span<std::byte> piece, uint64_t done) {
    std::memcpy(piece.data(), static_cast<const std::byte*>(data) + done, piece.size());
  });
}

void download(Device& device, const Buffer& src, uint64_t offset, void* data, uint64_t bytes) {
  const BufferSlice from = src.slice(offset, bytes);
  if (bytes == 0) return;
  Staging staging(device, std::min(bytes, Staging::kDefaultBytes));
  staging.download(from, [&](std::span<const std::byte> piece, uint64_t done) {
    std::memcpy(static_cast<std::byte*>(data) + done, piece.data(), piece.size());
  });
}

}  // namespace remat
