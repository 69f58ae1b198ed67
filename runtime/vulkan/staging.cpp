#include "runtime/vulkan/staging.h"

#include <algorithm>
#include <stdexcept>

namespace remat {

namespace {

// Orders earlier compute and transfer writes before a transfer.
void before_transfer(const DeviceFunctions& vk, VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

// Makes transfer writes visible to compute shaders, host reads and transfers of later
// submissions: barriers cover every command earlier in submission order on the queue.
void after_transfer(const DeviceFunctions& vk, VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT |
                              VK_PIPELINE_STAGE_TRANSFER_BIT,
                          0, 1, &mb, 0, nullptr, 0, nullptr);
}

uint64_t staging_bytes(uint64_t bytes) {
  return std::max<uint64_t>(bytes / 16 * 16, 16);
}

}  // namespace

Staging::Staging(Device& device, uint64_t bytes)
    : device_(device),
      buffer_(device, staging_bytes(bytes), MemoryCategory::staging, "staging", true) {}

void Staging::upload(const BufferSlice& dst, const Fill& fill) {
  auto* mapped = static_cast<std::byte*>(buffer_.mapped());
  for (uint64_t done = 0; done < dst.size;) {
    const uint64_t n = std::min(size(), dst.size - done);
    fill({mapped, static_cast<std::size_t>(n)}, done);
    device_.submit_and_wait([&](VkCommandBuffer cb) {
      before_transfer(device_.vk(), cb);
      const VkBufferCopy region{0, dst.offset + done, n};
      device_.vk().vkCmdCopyBuffer(cb, buffer_.handle(), dst.buffer, 1, &region);
      after_transfer(device_.vk(), cb);
    });
    done += n;
  }
}

void Staging::download(const BufferSlice& src, const Drain& drain) {
  const auto* mapped = static_cast<const std::byte*>(buffer_.mapped());
  for (uint64_t done = 0; done < src.size;) {
    const uint64_t n = std::min(size(), src.size - done);
    device_.submit_and_wait([&](VkCommandBuffer cb) {
      before_transfer(device_.vk(), cb);
      const VkBufferCopy region{src.offset + done, 0, n};
      device_.vk().vkCmdCopyBuffer(cb, src.buffer, buffer_.handle(), 1, &region);
      after_transfer(device_.vk(), cb);
    });
    drain({mapped, static_cast<std::size_t>(n)}, done);
    done += n;
  }
}

void fill_zero(Device& device, std::span<const BufferSlice> ranges) {
  for (const auto& r : ranges)
    if (r.offset % 4 || r.size % 4) throw std::logic_error("fill_zero needs 4-byte aligned ranges");
  if (ranges.empty()) return;
  device.submit_and_wait([&](VkCommandBuffer cb) {
    before_transfer(device.vk(), cb);
    for (const auto& r : ranges)
      if (r.size) device.vk().vkCmdFillBuffer(cb, r.buffer, r.offset, r.size, 0);
    after_transfer(device.vk(), cb);
  });
}

}  // namespace remat
