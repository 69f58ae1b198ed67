// Compute pipelines built from the SPIR-V embedded at build time, one per (kernel,
// specialization constants). Specialization constants 0-2 are the workgroup size
// (local_size_{x,y,z}_id); 3 and up select kernel variants.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "base/progress.h"
#include "remat_shaders/kernel_id.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/pipeline_cache.h"

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

// Each binding's descriptor type: UNIFORM_TEXEL_BUFFER for a `textureBuffer`, STORAGE_BUFFER
// otherwise (remat kernels use nothing else); std::logic_error for a `samplerBuffer`.
std::vector<VkDescriptorType> spirv_binding_types(std::span<const uint32_t> words);

using KernelKey = std::pair<KernelId, std::vector<uint32_t>>;  // kernel, specialization

class KernelCache {
 public:
  // With `cache_file`, pipelines compiled before (by any process) come from that file
  // (runtime/vulkan/pipeline_cache.h); save_pipeline_cache() writes new ones back.
  explicit KernelCache(Device& device,
                       std::optional<std::filesystem::path> cache_file = std::nullopt);
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  const Pipeline& get(KernelId kernel, const std::vector<uint32_t>& spec);
  // Builds every pipeline in `keys` not built yet, reporting phase "compile" (pipelines done of
  // those missing) after each; Cancelled leaves the ones built so far usable.
  void build(const std::vector<KernelKey>& keys, const ProgressFn& progress);
  Device& device() const { return device_; }

  std::size_t pipelines_built() const { return pipelines_.size(); }
  // Pipelines the driver reported as found in the pipeline cache (creation feedback; 0 where
  // the driver does not say).
  std::size_t pipeline_cache_hits() const { return cache_hits_; }
  const PipelineCache& pipeline_cache() const { return *cache_; }
  // Writes the pipeline cache file when it has new pipelines; warns instead of failing.
  bool save_pipeline_cache() { return cache_->save(); }

 private:
  void check_limits(KernelId kernel, const std::vector<uint32_t>& spec,
                    const std::vector<VkDescriptorType>& bindings) const;

  Device& device_;
  std::unique_ptr<PipelineCache> cache_;
  std::size_t cache_hits_ = 0;
  std::map<KernelKey, Pipeline> pipelines_;
  std::map<KernelId, VkShaderModule> modules_;
};

}  // namespace remat
