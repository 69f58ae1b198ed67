#include "runtime/vulkan/device_profiles.h"

#include <algorithm>
#include <stdexcept>

namespace remat {

namespace {

template <class T>
void clamp_max(T& value, const std::optional<T>& limit) {
  if (limit) value = std::min(value, *limit);
}

void clamp_alignment(uint64_t& value, const std::optional<uint64_t>& profile) {
  if (profile) value = std::max(value, *profile);
}

void clamp_feature(bool& value, const std::optional<bool>& profile) {
  if (profile) value = value && *profile;
}

void drop_extension(PhysicalDeviceSnapshot& d, bool supported, std::string_view name) {
  if (supported) return;
  std::erase(d.extensions, std::string(name));
}

void clamp_limits(PhysicalDeviceSnapshot& d, const DeviceProfile& p) {
  clamp_max(d.max_storage_buffer_range, p.max_storage_buffer_range);
  clamp_max(d.max_memory_allocation_size, p.max_memory_allocation_size);
  clamp_alignment(d.min_storage_buffer_offset_alignment, p.min_storage_buffer_offset_alignment);
  clamp_max(d.max_texel_buffer_elements, p.max_texel_buffer_elements);
  clamp_alignment(d.min_texel_buffer_offset_alignment, p.min_texel_buffer_offset_alignment);
  clamp_max(d.max_shared_memory_bytes, p.max_shared_memory_bytes);
  clamp_max(d.max_workgroup_invocations, p.max_workgroup_invocations);
  for (int i = 0; i < 3; ++i) {
    if (p.max_workgroup_size)
      d.max_workgroup_size[i] = std::min(d.max_workgroup_size[i], (*p.max_workgroup_size)[i]);
    if (p.max_workgroup_count)
      d.max_workgroup_count[i] = std::min(d.max_workgroup_count[i], (*p.max_workgroup_count)[i]);
  }
  clamp_max(d.max_push_constants_bytes, p.max_push_constants_bytes);
  clamp_max(d.max_storage_buffers_per_stage, p.max_storage_buffers_per_stage);
  clamp_feature(d.timestamps, p.timestamps);
}

void clamp_subgroups(PhysicalDeviceSnapshot& d, const DeviceProfile& p) {
  clamp_feature(d.subgroup_arithmetic, p.subgroup_arithmetic);
  clamp_feature(d.subgroup_ballot, p.subgroup_ballot);
  clamp_feature(d.subgroup_vote, p.subgroup_vote);
  clamp_feature(d.subgroup_shuffle, p.subgroup_shuffle);
  clamp_feature(d.subgroup_quad, p.subgroup_quad);
  if (p.subgroup_size && *p.subgroup_size != d.subgroup_size)
    d.subgroup_arithmetic = d.subgroup_ballot = d.subgroup_vote = d.subgroup_shuffle =
        d.subgroup_quad = false;
}

void clamp_features(PhysicalDeviceSnapshot& d, const DeviceProfile& p) {
  clamp_feature(d.storage_buffer_16bit, p.storage_buffer_16bit);
  clamp_feature(d.shader_float16, p.shader_float16);
  clamp_feature(d.buffer_device_address, p.buffer_device_address);
  clamp_feature(d.cooperative_matrix, p.cooperative_matrix);
  clamp_feature(d.push_descriptors, p.push_descriptors);
  clamp_feature(d.memory_budget, p.memory_budget);
  // plan_device enables extensions by the flags; the list follows them so no reader of it sees an
  // extension the profiled GPU lacks.
  drop_extension(d, d.cooperative_matrix, "VK_KHR_cooperative_matrix");
  drop_extension(d, d.push_descriptors, "VK_KHR_push_descriptor");
  drop_extension(d, d.memory_budget, "VK_EXT_memory_budget");
  drop_extension(d, d.shader_float16, "VK_KHR_shader_float16_int8");
  drop_extension(d, d.buffer_device_address, "VK_KHR_buffer_device_address");
  if (!d.memory_budget)
    for (auto& h : d.heaps) h.budget_bytes = 0;  // the snapshot's "extension absent"
}

void clamp_heaps(PhysicalDeviceSnapshot& d, const DeviceProfile& p) {
  if (!p.device_local_bytes) return;
  uint64_t left = *p.device_local_bytes;
  for (auto& h : d.heaps) {
    if (!h.device_local) continue;
    h.size_bytes = std::min(h.size_bytes, left);
    h.budget_bytes = std::min(h.budget_bytes, h.size_bytes);
    left -= h.size_bytes;
  }
}

template <class T>
std::string below(std::string_view field, T value, T required) {
  return std::string(field) + " " + std::to_string(value) + " < " + std::to_string(required);
}

}  // namespace

const DeviceProfile* find_device_profile(std::string_view name) {
  for (const auto& p : device_profiles())
    if (p.name == name) return &p;
  return nullptr;
}

std::string device_profile_names() {
  std::string s;
  for (const auto& p : device_profiles()) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

const DeviceProfile& device_profile(std::string_view name) {
  if (const DeviceProfile* p = find_device_profile(name)) return *p;
  throw std::invalid_argument("unknown device profile '" + std::string(name) +
                              "'; known profiles: " + device_profile_names());
}

PhysicalDeviceSnapshot apply_device_profile(PhysicalDeviceSnapshot d, const DeviceProfile& p) {
  clamp_limits(d, p);
  clamp_subgroups(d, p);
  clamp_features(d, p);
  clamp_heaps(d, p);
  d.profile = std::string(p.name);
  d.name += " as " + d.profile;
  return d;
}

std::optional<std::string> below_required_limits(const DeviceProfile& p) {
  using R = VulkanRequiredLimits;
  if (p.max_storage_buffer_range && *p.max_storage_buffer_range < R::max_storage_buffer_range)
    return below("maxStorageBufferRange", *p.max_storage_buffer_range, R::max_storage_buffer_range);
  if (p.max_memory_allocation_size && *p.max_memory_allocation_size < R::max_memory_allocation_size)
    return below("maxMemoryAllocationSize", *p.max_memory_allocation_size,
                 R::max_memory_allocation_size);
  if (p.min_storage_buffer_offset_alignment &&
      *p.min_storage_buffer_offset_alignment > R::max_storage_buffer_offset_alignment)
    return "minStorageBufferOffsetAlignment " +
           std::to_string(*p.min_storage_buffer_offset_alignment) + " > 256";
  if (p.max_texel_buffer_elements && *p.max_texel_buffer_elements < R::max_texel_buffer_elements)
    return below("maxTexelBufferElements", *p.max_texel_buffer_elements,
                 R::max_texel_buffer_elements);
  if (p.min_texel_buffer_offset_alignment &&
      *p.min_texel_buffer_offset_alignment > R::max_texel_buffer_offset_alignment)
    return "minTexelBufferOffsetAlignment " + std::to_string(*p.min_texel_buffer_offset_alignment) +
           " > 256";
  if (p.max_shared_memory_bytes && *p.max_shared_memory_bytes < R::max_shared_memory_bytes)
    return below("maxComputeSharedMemorySize", *p.max_shared_memory_bytes,
                 R::max_shared_memory_bytes);
  if (p.max_workgroup_invocations && *p.max_workgroup_invocations < R::max_workgroup_invocations)
    return below("maxComputeWorkGroupInvocations", *p.max_workgroup_invocations,
                 R::max_workgroup_invocations);
  for (int i = 0; i < 3; ++i) {
    if (p.max_workgroup_size && (*p.max_workgroup_size)[i] < R::max_workgroup_size[i])
      return below("maxComputeWorkGroupSize[" + std::to_string(i) + "]", (*p.max_workgroup_size)[i],
                   R::max_workgroup_size[i]);
    if (p.max_workgroup_count && (*p.max_workgroup_count)[i] < R::max_workgroup_count[i])
      return below("maxComputeWorkGroupCount[" + std::to_string(i) + "]",
                   (*p.max_workgroup_count)[i], R::max_workgroup_count[i]);
  }
  if (p.max_push_constants_bytes && *p.max_push_constants_bytes < R::max_push_constants_bytes)
    return below("maxPushConstantsSize", *p.max_push_constants_bytes, R::max_push_constants_bytes);
  if (p.max_storage_buffers_per_stage &&
      *p.max_storage_buffers_per_stage < R::max_storage_buffers_per_stage)
    return below("maxPerStageDescriptorStorageBuffers", *p.max_storage_buffers_per_stage,
                 R::max_storage_buffers_per_stage);
  if (p.subgroup_size && *p.subgroup_size < R::subgroup_size)
    return below("subgroupSize", *p.subgroup_size, R::subgroup_size);
  return std::nullopt;
}

}  // namespace remat
