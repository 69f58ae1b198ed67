#include "runtime/vulkan/arena.h"

#include <algorithm>
#include <stdexcept>

namespace remat {

namespace {

uint64_t chunk_limit(const Device& device, uint64_t bytes, uint64_t chunk_bytes) {
  const uint64_t align = std::max<uint64_t>(device.info().min_storage_buffer_offset_alignment, 4);
  uint64_t limit = chunk_bytes ? chunk_bytes : device.info().max_memory_allocation_size;
  if (limit == 0) limit = bytes;
  return std::max<uint64_t>(limit / align * align, align);
}

}  // namespace

std::vector<uint64_t> Arena::chunk_sizes(const Device& device, uint64_t bytes,
                                         uint64_t chunk_bytes) {
  const uint64_t chunk = chunk_limit(device, bytes, chunk_bytes);
  std::vector<uint64_t> sizes;
  for (uint64_t start = 0; start < bytes; start += chunk)
    sizes.push_back(std::min(chunk, bytes - start));
  return sizes;
}

Arena::Arena(Device& device, uint64_t bytes, uint64_t chunk_bytes, MemoryCategory category,
             const std::string& name)
    : size_(bytes), chunk_bytes_(chunk_limit(device, bytes, chunk_bytes)), name_(name) {
  if (bytes == 0) throw std::invalid_argument("the " + name + " must be at least 1 byte");
  const std::vector<uint64_t> sizes = chunk_sizes(device, bytes, chunk_bytes);
  chunks_.reserve(sizes.size());
  for (uint64_t n : sizes)
    chunks_.emplace_back(device, n, category, name + " chunk " + std::to_string(chunks_.size()));
}

BufferSlice Arena::slice(uint64_t offset, uint64_t bytes) const {
  if (offset > size_ || bytes > size_ - offset)
    throw std::out_of_range(name_ + " slice [" + std::to_string(offset) + ", +" +
                            std::to_string(bytes) + ") exceeds the " + name_ + " of " +
                            std::to_string(size_) + " bytes");
  const uint64_t chunk = offset / chunk_bytes_;
  const uint64_t local = offset - chunk * chunk_bytes_;
  if (bytes > 0 && local + bytes > chunks_[chunk].size())
    throw std::out_of_range(name_ + " slice [" + std::to_string(offset) + ", +" +
                            std::to_string(bytes) + ") crosses a chunk boundary at " +
                            std::to_string((chunk + 1) * chunk_bytes_));
  return chunks_[chunk].slice(local, bytes);
}

uint64_t Arena::allocated_bytes() const {
  uint64_t total = 0;
  for (const auto& c : chunks_) total += c.allocated_bytes();
  return total;
}

std::pair<const Buffer*, uint64_t> Arena::locate(uint64_t offset) const {
  if (offset >= size_)
    throw std::out_of_range(name_ + " offset " + std::to_string(offset) + " is past its end");
  const uint64_t chunk = offset / chunk_bytes_;
  return {&chunks_[chunk], offset - chunk * chunk_bytes_};
}

}  // namespace remat
