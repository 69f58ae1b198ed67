#include "runtime/vulkan/arena.h"

#include <algorithm>
#include <stdexcept>

namespace remat {

namespace {

std::vector<uint64_t> split(uint64_t bytes, uint64_t chunk_bytes) {
  if (chunk_bytes == 0) chunk_bytes = bytes;
  std::vector<uint64_t> sizes;
  for (uint64_t start = 0; start < bytes; start += chunk_bytes)
    sizes.push_back(std::min(chunk_bytes, bytes - start));
  return sizes;
}

void check_chunks(const Device& device, const std::vector<uint64_t>& sizes,
                  const std::string& name) {
  if (sizes.empty() || sizes.front() == 0)
    throw std::invalid_argument("the " + name + " must be at least 1 byte");
  const uint64_t limit = device.info().max_memory_allocation_size;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const bool regular = i + 1 < sizes.size() ? sizes[i] == sizes.front()
                                              : sizes[i] > 0 && sizes[i] <= sizes.front();
    if (!regular)
      throw std::invalid_argument("the " + name +
                                  "'s chunks must share one size, the last no larger");
    if (limit != 0 && sizes[i] > limit)
      throw std::invalid_argument("the " + name + " was planned in allocations of " +
                                  std::to_string(sizes[i]) + " bytes, more than " +
                                  device.info().name + "'s maxMemoryAllocationSize of " +
                                  std::to_string(limit) + " bytes");
  }
}

}  // namespace

Arena::Arena(Device& device, const std::vector<uint64_t>& chunk_sizes, MemoryCategory category,
             const std::string& name)
    : name_(name) {
  check_chunks(device, chunk_sizes, name);
  chunk_bytes_ = chunk_sizes.front();
  chunks_.reserve(chunk_sizes.size());
  for (uint64_t n : chunk_sizes) {
    chunks_.emplace_back(device, n, category, name + " chunk " + std::to_string(chunks_.size()));
    size_ += n;
  }
}

Arena::Arena(Device& device, uint64_t bytes, uint64_t chunk_bytes, MemoryCategory category,
             const std::string& name)
    : Arena(device, split(bytes, chunk_bytes), category, name) {}

BufferSlice Arena::slice(uint64_t offset, uint64_t bytes) const {
  if (offset > size_ || bytes > size_ - offset)
    throw std::out_of_range(name_ + " slice [" + std::to_string(offset) + ", +" +
                            std::to_string(bytes) + ") exceeds the " + name_ + " of " +
                            std::to_string(size_) + " bytes");
  const uint64_t chunk = std::min<uint64_t>(offset / chunk_bytes_, chunks_.size() - 1);
  const uint64_t local = offset - chunk * chunk_bytes_;
  if (bytes > 0 && local + bytes > chunks_[chunk].size())
    throw std::logic_error(name_ + " slice [" + std::to_string(offset) + ", +" +
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
