// Records a list of dispatches ONCE into a command buffer, with a barrier exactly where a
// dispatch touches bytes an earlier, not-yet-synchronized dispatch wrote (or writes bytes it
// read). run() resubmits the same command buffer: nothing is decided at run time.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/kernel_cache.h"

namespace remat {

// One binding of a dispatch. The kernel's SPIR-V decides the descriptor type: a storage buffer,
// or (for a `textureBuffer`) a uniform texel buffer, for which the executor creates a view of
// the slice with `texel_format`.
struct Binding {
  BufferSlice slice;    // the bytes bound at this binding index
  bool writes = false;  // the kernel may write these bytes (decides barriers)
  // texel bindings: one of kernels::texel_format's (RGBA32F, R32F, or 16-bit ones for f16/bf16)
  VkFormat texel_format = VK_FORMAT_R32G32B32A32_SFLOAT;
};

// A read-only input of one float per texel where the kernel reads a texel view (the *_texels
// kernels); for a storage buffer the executor ignores the format.
inline Binding float_input(BufferSlice s) {
  return {s, false, VK_FORMAT_R32_SFLOAT};
}

struct Dispatch {
  KernelId kernel{};
  std::vector<uint32_t> spec;     // specialization constants: 0-2 workgroup size, 3+ variants
  std::vector<Binding> bindings;  // binding i of set 0
  std::vector<uint8_t> push;      // push-constant bytes (a struct from push_constants.h)
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::string label;  // for timings and errors, e.g. "h.3.mlp.c_fc matmul"
  int step = -1;      // index into Plan::steps of the step it executes; -1 outside a plan
};

template <class P>
std::vector<uint8_t> push_bytes(const P& p) {
  std::vector<uint8_t> out(sizeof(P));
  std::memcpy(out.data(), &p, sizeof(P));
  return out;
}

inline uint32_t div_up(uint64_t n, uint64_t d) {
  return static_cast<uint32_t>((n + d - 1) / d);
}

// Workgroups for a kernel that loops over `items` with a grid stride: one item per invocation up
// to 65535 groups, the maxComputeWorkGroupCount[0] every Vulkan device supports.
inline uint32_t grid_stride_groups(uint64_t items, uint32_t group_size) {
  const uint64_t groups = (items + group_size - 1) / group_size;
  return static_cast<uint32_t>(std::clamp<uint64_t>(groups, 1, 65535));
}

// A buffer-to-buffer copy recorded before the first or after the last dispatch (inputs in from
// host-visible staging, results out to it), so one submission moves the data and runs the step.
struct CopyRegion {
  VkBuffer src = VK_NULL_HANDLE;
  VkBuffer dst = VK_NULL_HANDLE;
  uint64_t src_offset = 0;
  uint64_t dst_offset = 0;
  uint64_t bytes = 0;
};

struct ExecutorOptions {
  bool timestamps = false;         // write a timestamp before each dispatch and at the end
  std::vector<CopyRegion> before;  // copies recorded ahead of the dispatches
  std::vector<CopyRegion> after;   // copies recorded after them
};

class Executor {
 public:
  // Validates every dispatch against the device limits and records the command buffer.
  Executor(KernelCache& kernels, std::vector<Dispatch> dispatches, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Submits and waits. The device signals a progress marker after every 1/kProgressMarkers of
  // the dispatches, and the wait fails as making no progress only when no marker is reached
  // within one device wait (600 s): a step of an hour on a CPU driver runs to its end.
  void run();
  static constexpr std::size_t kProgressMarkers = 64;
  std::size_t progress_markers() const { return markers_.size(); }
  // How many markers the device has signalled in the current (or last) run.
  uint64_t markers_reached() const;
  std::size_t dispatch_count() const { return dispatches_.size(); }
  std::size_t barrier_count() const { return barrier_count_; }
  // Milliseconds per dispatch of the last run(); empty without timestamps.
  std::vector<double> dispatch_ms() const;
  const std::vector<Dispatch>& dispatches() const { return dispatches_; }

 private:
  void validate(const Dispatch& d, const Pipeline& p) const;
  void validate_texels(const std::string& who, const Binding& b) const;
  void record();
  void create_markers();
  VkBufferView texel_view(const Binding& b);  // creates a view owned by views_
  void record_copies(const std::vector<CopyRegion>& copies);

  Device& device_;
  KernelCache& kernels_;
  std::vector<Dispatch> dispatches_;
  ExecutorOptions options_;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  std::vector<VkBufferView> views_;  // texel views of texel bindings, alive as long as cb_
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  std::vector<VkEvent> markers_;
  std::vector<std::size_t> marker_after_;  // markers_[m] is set after dispatch marker_after_[m]
  std::size_t barrier_count_ = 0;
};

}  // namespace remat
