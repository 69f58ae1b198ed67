// The activation arena: exactly plan.arena_bytes of device memory, addressed by offset. It is one
// allocation unless the device's maxMemoryAllocationSize forces chunks (2 GiB on lavapipe); a
// tensor must then lie inside one chunk, and slice() says so when it does not.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/vulkan/buffer.h"

namespace remat {

class Arena {
 public:
  // chunk_bytes 0 means the device's maxMemoryAllocationSize. The persistent buffer (parameters,
  // gradients, optimizer state) is laid out the same way, with its own category and name.
  Arena(Device& device, uint64_t bytes, uint64_t chunk_bytes = 0,
        MemoryCategory category = MemoryCategory::arena, const std::string& name = "arena");

  // The sizes of the chunks such an arena allocates, in order.
  static std::vector<uint64_t> chunk_sizes(const Device& device, uint64_t bytes,
                                           uint64_t chunk_bytes = 0);

  uint64_t size() const { return size_; }
  uint64_t chunk_bytes() const { return chunk_bytes_; }
  std::size_t chunk_count() const { return chunks_.size(); }
  const Buffer& chunk(std::size_t i) const { return chunks_.at(i); }
  uint64_t allocated_bytes() const;  // sum over chunks of what the driver allocated
  // The bytes [offset, offset + bytes) of the arena as a bindable slice.
  BufferSlice slice(uint64_t offset, uint64_t bytes) const;
  // The chunk holding byte `offset` and the offset inside it.
  std::pair<const Buffer*, uint64_t> locate(uint64_t offset) const;

 private:
  uint64_t size_;
  uint64_t chunk_bytes_;
  std::vector<Buffer> chunks_;
  std::string name_;
};

}  // namespace remat
