// Compute pipelines built from the SPIR-V embedded at build time, one per (kernel,
// specialization constants). Specialization constants 0-2 are the workgroup size
// (local_size_{x,y,z}_id); 3 and up select kernel variants.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "remat_shaders/kernel_id.h"
#include "runtime/device.h"

namespace remat {

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t binding_count = 0;  // bindings 0..binding_count-1 of set 0
  std::vector<VkDescriptorType>
      binding_types;  // storage buffer or uniform texel buffer, per binding
};

// Bindings a SPIR-V module declares in set 0 (max Binding decoration + 1).
uint32_t spirv_binding_count(std::span<const uint32_t> words);

// The descriptor type of each binding 0..count-1: VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER for a
// `samplerBuffer`, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER otherwise (remat kernels use nothing else).
std::vector<VkDescriptorType> spirv_binding_types(std::span<const uint32_t> words);

class KernelCache {
 public:
  explicit KernelCache(Device& device) : device_(device) {}
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  const Pipeline& get(KernelId kernel, const std::vector<uint32_t>& spec);
  Device& device() const { return device_; }

 private:
  Device& device_;
  std::map<std::pair<KernelId, std::vector<uint32_t>>, Pipeline> pipelines_;
  std::map<KernelId, VkShaderModule> modules_;
};

}  // namespace remat
