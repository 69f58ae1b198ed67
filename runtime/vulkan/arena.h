// A buffer addressed by offset that may span several device allocations: the activation arena
// and the persistent buffer, allocated in exactly the chunks their plan lays out. Every chunk but
// the last has the same size (the plan's page), so byte `offset` lies in chunk offset / page; a
// slice must lie inside one chunk, which the planner guarantees (planner/allocation_pages.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/vulkan/buffer.h"

namespace remat {

class Arena {
 public:
  // One allocation per entry of chunk_sizes. std::invalid_argument when there are none, when a
  // chunk before the last differs from the first or the last is larger, and when one exceeds the
  // device's maxMemoryAllocationSize (a plan made for another device).
  Arena(Device& device, const std::vector<uint64_t>& chunk_sizes,
        MemoryCategory category = MemoryCategory::arena, const std::string& name = "arena");
  // `bytes` in chunks of chunk_bytes (0: one allocation), as a plan with that page would lay out.
  Arena(Device& device, uint64_t bytes, uint64_t chunk_bytes = 0,
        MemoryCategory category = MemoryCategory::arena, const std::string& name = "arena");

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
  uint64_t size_ = 0;
  uint64_t chunk_bytes_ = 0;
  std::vector<Buffer> chunks_;
  std::string name_;
};

}  // namespace remat
