// Moving bytes between the host and device buffers through ONE bounded host-visible buffer,
// piece by piece: loading or saving a model costs a few MiB of host memory, not its size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "runtime/vulkan/buffer.h"

namespace remat {

class Staging {
 public:
  static constexpr uint64_t kDefaultBytes = 4ull << 20;

  // A host-visible buffer of `bytes` (rounded down to 16, at least 16).
  explicit Staging(Device& device, uint64_t bytes = kDefaultBytes);

  uint64_t size() const { return buffer_.size(); }

  // `fill(piece, done)` writes piece.size() bytes into staging memory (the bytes of `dst` from
  // `done` on); each piece is then copied into `dst` and waited for. Pieces are size() bytes
  // except the last. The copies are visible to later submissions' shaders.
  using Fill = std::function<void(std::span<std::byte> piece, uint64_t done)>;
  void upload(const BufferSlice& dst, const Fill& fill);

  // The bytes of `src`, piece by piece: `drain(piece, done)` reads staging memory holding bytes
  // [done, done + piece.size()) of `src`. Earlier submissions' writes are visible.
  using Drain = std::function<void(std::span<const std::byte> piece, uint64_t done)>;
  void download(const BufferSlice& src, const Drain& drain);

 private:
  Device& device_;
  Buffer buffer_;
};

// Zeroes every range on the device (vkCmdFillBuffer), in one submission; offsets and sizes must be
// multiples of 4. The zeros are visible to later submissions' shaders and transfers.
void fill_zero(Device& device, std::span<const BufferSlice> ranges);

}  // namespace remat
