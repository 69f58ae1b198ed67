// The device GPU tests share: opened once per process with the Khronos validation layer on
// (REMAT_VALIDATION=1 is set by ctest). Any validation message fails the test run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/executor.h"
#include "runtime/vulkan/kernel_cache.h"

namespace remat::test {

Device& device();
KernelCache& kernels();
// Validation messages recorded so far in this process (0 when the device was never opened).
std::size_t validation_message_count();

// A device buffer holding `data` (persistent category); `bytes` 0 means exactly the data's size.
template <class T>
Buffer upload_buffer(const std::vector<T>& data, const std::string& name, uint64_t bytes = 0) {
  Buffer b(device(), bytes ? bytes : data.size() * sizeof(T), MemoryCategory::persistent, name);
  upload(device(), b, 0, data.data(), data.size() * sizeof(T));
  return b;
}
// A device buffer of `count` elements of T, filled with a recognisable garbage pattern
// (0xFF bytes = NaN for floats) so a kernel that misses an element is caught.
template <class T>
Buffer garbage_buffer(std::size_t count, const std::string& name) {
  std::vector<uint8_t> junk(count * sizeof(T), 0xFF);
  return upload_buffer(junk, name);
}
template <class T>
std::vector<T> read(const Buffer& b, std::size_t count, uint64_t offset = 0) {
  return download<T>(device(), b, count, offset);
}
// Records the dispatches into an Executor and runs it once.
void run_once(std::vector<Dispatch> dispatches);

}  // namespace remat::test
