#include "runtime/vulkan/executor.h"

#include <stdexcept>

#include "runtime/vulkan/error.h"
#include "runtime/vulkan/texel_format.h"

namespace remat {

namespace {

struct Range {
  VkBuffer buffer;
  uint64_t begin, end;
  bool overlaps(const Range& o) const {
    return buffer == o.buffer && begin < o.end && o.begin < end;
  }
};

bool any_overlap(const std::vector<Range>& set, const Range& r) {
  for (const auto& x : set)
    if (x.overlaps(r)) return true;
  return false;
}

void memory_barrier(const DeviceFunctions& vk, VkCommandBuffer cb, VkPipelineStageFlags src,
                    VkAccessFlags src_access, VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = src_access;
  mb.dstAccessMask = dst_access;
  vk.vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

}  // namespace

Executor::Executor(KernelCache& kernels, std::vector<Dispatch> dispatches, ExecutorOptions options)
    : device_(kernels.device()),
      kernels_(kernels),
      dispatches_(std::move(dispatches)),
      options_(options) {
  VkDevice dev = device_.handle();
  uint32_t storage = 0, texels = 0;
  for (const auto& d : dispatches_) {
    const Pipeline& p = kernels_.get(d.kernel, d.spec);
    validate(d, p);
    for (VkDescriptorType t : p.binding_types)
      ++(t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER ? storage : texels);
  }
  if (!dispatches_.empty()) {
    VkDescriptorPoolSize sizes[2] = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(storage, 1u)},
        {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, std::max(texels, 1u)}};
    VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pci.maxSets = static_cast<uint32_t>(dispatches_.size());
    pci.poolSizeCount = 2;
    pci.pPoolSizes = sizes;
    vk_check(device_.vk().vkCreateDescriptorPool(dev, &pci, nullptr, &pool_),
             "vkCreateDescriptorPool",
             "recording " + std::to_string(dispatches_.size()) + " dispatches");
  }
  if (options_.timestamps) {
    if (!device_.info().timestamps)
      throw VulkanError(device_.info().name + " has no compute timestamps",
                        VK_ERROR_FEATURE_NOT_PRESENT);
    VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qci.queryCount = static_cast<uint32_t>(dispatches_.size() + 1);
    vk_check(device_.vk().vkCreateQueryPool(dev, &qci, nullptr, &queries_), "vkCreateQueryPool");
  }
  create_markers();
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = device_.command_pool();
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  vk_check(device_.vk().vkAllocateCommandBuffers(dev, &ai, &cb_), "vkAllocateCommandBuffers");
  record();
}

Executor::~Executor() {
  VkDevice dev = device_.handle();
  // After a timed-out wait the step may still run on the device: its command buffer, views and
  // descriptors are freed only once it has finished (else the buffer goes with the pool).
  const bool idle = device_.finish_timed_out_work();
  if (cb_ && idle) device_.vk().vkFreeCommandBuffers(dev, device_.command_pool(), 1, &cb_);
  if (!idle) return;
  if (queries_) device_.vk().vkDestroyQueryPool(dev, queries_, nullptr);
  for (VkBufferView v : views_) device_.vk().vkDestroyBufferView(dev, v, nullptr);
  if (pool_) device_.vk().vkDestroyDescriptorPool(dev, pool_, nullptr);
  for (VkEvent e : markers_) device_.vk().vkDestroyEvent(dev, e, nullptr);
}

// Evenly spread over the dispatches, the last one after the last dispatch.
void Executor::create_markers() {
  const std::size_t n = dispatches_.size(), count = std::min(n, kProgressMarkers);
  for (std::size_t m = 0; m < count; ++m) {
    VkEventCreateInfo ci{VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
    VkEvent e = VK_NULL_HANDLE;
    vk_check(device_.vk().vkCreateEvent(device_.handle(), &ci, nullptr, &e), "vkCreateEvent");
    markers_.push_back(e);
    marker_after_.push_back((m + 1) * n / count - 1);
  }
}

uint64_t Executor::markers_reached() const {
  uint64_t set = 0;
  for (VkEvent e : markers_)
    set += device_.vk().vkGetEventStatus(device_.handle(), e) == VK_EVENT_SET;
  return set;
}

void Executor::validate(const Dispatch& d, const Pipeline& p) const {
  const auto& info = device_.info();
  const std::string who =
      "dispatch '" + (d.label.empty() ? std::string(kernel_name(d.kernel)) : d.label) + "'";
  if (d.bindings.size() != p.binding_count)
    throw std::invalid_argument(who + " binds " + std::to_string(d.bindings.size()) +
                                " buffers; kernel " + std::string(kernel_name(d.kernel)) +
                                " declares " + std::to_string(p.binding_count));
  if (d.push.size() > 128) throw std::invalid_argument(who + ": push constants exceed 128 bytes");
  for (std::size_t i = 0; i < d.bindings.size(); ++i) {
    const BufferSlice& s = d.bindings[i].slice;
    if (s.buffer == VK_NULL_HANDLE || s.size == 0)
      throw std::invalid_argument(who + ": binding " + std::to_string(i) + " is empty");
    if (p.binding_types[i] == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER) {
      validate_texels(who + ": binding " + std::to_string(i), d.bindings[i]);
      continue;
    }
    if (s.size > info.max_storage_buffer_range)
      throw std::invalid_argument(who + ": binding " + std::to_string(i) + " spans " +
                                  std::to_string(s.size) + " bytes, above this device's " +
                                  "maxStorageBufferRange of " +
                                  std::to_string(info.max_storage_buffer_range));
    if (info.min_storage_buffer_offset_alignment &&
        s.offset % info.min_storage_buffer_offset_alignment != 0)
      throw std::invalid_argument(who + ": binding " + std::to_string(i) + " offset " +
                                  std::to_string(s.offset) + " is not a multiple of " +
                                  std::to_string(info.min_storage_buffer_offset_alignment));
  }
  for (int a = 0; a < 3; ++a)
    if (d.groups[a] == 0 || d.groups[a] > info.max_workgroup_count[a])
      throw std::invalid_argument(who + ": group count " + std::to_string(d.groups[a]) +
                                  " on axis " + std::to_string(a) + " is outside [1, " +
                                  std::to_string(info.max_workgroup_count[a]) + "]");
}

void Executor::validate_texels(const std::string& who, const Binding& b) const {
  const auto& info = device_.info();
  const uint64_t texel = texel_format_bytes(b.texel_format);
  if (texel == 0)
    throw std::invalid_argument(who + ": texel view format " + std::to_string(b.texel_format) +
                                " is not one of kernels::texel_format's");
  if (b.writes)
    throw std::invalid_argument(who + " is a read-only texel view but is marked written");
  if (b.slice.size % texel != 0 || b.slice.size / texel > info.max_texel_buffer_elements)
    throw std::invalid_argument(who + " spans " + std::to_string(b.slice.size) +
                                " bytes: not a whole number of " + std::to_string(texel) +
                                "-byte texels up to this device's maxTexelBufferElements of " +
                                std::to_string(info.max_texel_buffer_elements));
  if (info.min_texel_buffer_offset_alignment &&
      b.slice.offset % info.min_texel_buffer_offset_alignment != 0)
    throw std::invalid_argument(who + " offset " + std::to_string(b.slice.offset) +
                                " is not a multiple of " +
                                std::to_string(info.min_texel_buffer_offset_alignment));
}

void Executor::record() {
  VkDevice dev = device_.handle();
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vk_check(device_.vk().vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
  if (queries_)
    device_.vk().vkCmdResetQueryPool(cb_, queries_, 0,
                                     static_cast<uint32_t>(dispatches_.size() + 1));

  constexpr VkAccessFlags kAll = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  if (!options_.before.empty()) {
    // The previous run's shader reads and writes finish before the copies overwrite inputs.
    memory_barrier(device_.vk(), cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kAll,
                   VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    record_copies(options_.before);
  }
  // Earlier submissions (uploads, the previous run) and the copies above finish their writes
  // before the dispatches read.
  memory_barrier(device_.vk(), cb_,
                 VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                 VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kAll);

  std::vector<Range> pending_writes, pending_reads;
  std::size_t next_marker = 0;
  for (std::size_t di = 0; di < dispatches_.size(); ++di) {
    const Dispatch& d = dispatches_[di];
    const Pipeline& p = kernels_.get(d.kernel, d.spec);

    bool hazard = false;
    for (const auto& b : d.bindings) {
      Range r{b.slice.buffer, b.slice.offset, b.slice.offset + b.slice.size};
      if (any_overlap(pending_writes, r) || (b.writes && any_overlap(pending_reads, r)))
        hazard = true;
    }
    if (hazard) {
      memory_barrier(device_.vk(), cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                     VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kAll);
      ++barrier_count_;
      pending_writes.clear();
      pending_reads.clear();
    }
    for (const auto& b : d.bindings) {
      Range r{b.slice.buffer, b.slice.offset, b.slice.offset + b.slice.size};
      (b.writes ? pending_writes : pending_reads).push_back(r);
    }

    VkDescriptorSet set = VK_NULL_HANDLE;
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &p.set_layout;
    vk_check(device_.vk().vkAllocateDescriptorSets(dev, &ai, &set), "vkAllocateDescriptorSets");
    std::vector<VkDescriptorBufferInfo> infos(d.bindings.size());
    std::vector<VkBufferView> views(d.bindings.size());
    std::vector<VkWriteDescriptorSet> writes(d.bindings.size());
    for (uint32_t i = 0; i < d.bindings.size(); ++i) {
      const BufferSlice& s = d.bindings[i].slice;
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = p.binding_types[i];
      if (p.binding_types[i] == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER) {
        views[i] = texel_view(d.bindings[i]);
        writes[i].pTexelBufferView = &views[i];
      } else {
        infos[i] = {s.buffer, s.offset, s.size};
        writes[i].pBufferInfo = &infos[i];
      }
    }
    device_.vk().vkUpdateDescriptorSets(dev, static_cast<uint32_t>(writes.size()), writes.data(), 0,
                                        nullptr);

    if (queries_)
      device_.vk().vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_,
                                       static_cast<uint32_t>(di));
    device_.vk().vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    device_.vk().vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set,
                                         0, nullptr);
    if (!d.push.empty())
      device_.vk().vkCmdPushConstants(cb_, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                      static_cast<uint32_t>(d.push.size()), d.push.data());
    device_.vk().vkCmdDispatch(cb_, d.groups[0], d.groups[1], d.groups[2]);
    // Set once the dispatches before it have finished their compute stage.
    if (next_marker < markers_.size() && marker_after_[next_marker] == di)
      device_.vk().vkCmdSetEvent(cb_, markers_[next_marker++],
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  }
  if (queries_)
    device_.vk().vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_,
                                     static_cast<uint32_t>(dispatches_.size()));
  // The results are read back by transfers or reused by the next run.
  memory_barrier(device_.vk(), cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                 VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                     VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT | kAll);
  if (!options_.after.empty()) {
    record_copies(options_.after);
    memory_barrier(device_.vk(), cb_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  }
  vk_check(device_.vk().vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
}

VkBufferView Executor::texel_view(const Binding& b) {
  VkBufferViewCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  ci.buffer = b.slice.buffer;
  ci.format = b.texel_format;
  ci.offset = b.slice.offset;
  ci.range = b.slice.size;
  VkBufferView view = VK_NULL_HANDLE;
  vk_check(device_.vk().vkCreateBufferView(device_.handle(), &ci, nullptr, &view),
           "vkCreateBufferView");
  views_.push_back(view);
  return view;
}

void Executor::record_copies(const std::vector<CopyRegion>& copies) {
  for (const auto& c : copies) {
    VkBufferCopy region{c.src_offset, c.dst_offset, c.bytes};
    device_.vk().vkCmdCopyBuffer(cb_, c.src, c.dst, 1, &region);
  }
}

void Executor::run() {
  // A previous run whose wait timed out is waited for before the host resets the markers it may
  // still set; one that never finishes is refused by submit_and_wait, with its message.
  if (!device_.finish_timed_out_work()) return device_.submit_and_wait(cb_);
  for (VkEvent e : markers_)
    vk_check(device_.vk().vkResetEvent(device_.handle(), e), "vkResetEvent");
  device_.submit_and_wait(cb_, [this] { return markers_reached(); });
}

std::vector<double> Executor::dispatch_ms() const {
  if (!queries_) return {};
  std::vector<uint64_t> ticks(dispatches_.size() + 1);
  vk_check(device_.vk().vkGetQueryPoolResults(
               device_.handle(), queries_, 0, static_cast<uint32_t>(ticks.size()),
               ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
               VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
           "vkGetQueryPoolResults");
  std::vector<double> ms(dispatches_.size());
  const double period = device_.info().timestamp_period_ns;
  for (std::size_t i = 0; i < ms.size(); ++i)
    ms[i] = double(ticks[i + 1] - ticks[i]) * period * 1e-6;
  return ms;
}

}  // namespace remat
