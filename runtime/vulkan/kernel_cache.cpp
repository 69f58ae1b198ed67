#include "runtime/vulkan/kernel_cache.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "runtime/vulkan/error.h"

namespace remat {

uint32_t spirv_binding_count(std::span<const uint32_t> words) {
  // SPIR-V: 5-word header, then instructions whose first word is (word count << 16) | opcode.
  constexpr uint32_t kOpDecorate = 71;
  constexpr uint32_t kDecorationBinding = 33;
  uint32_t count = 0;
  for (std::size_t i = 5; i < words.size();) {
    const uint32_t n = words[i] >> 16;
    const uint32_t op = words[i] & 0xFFFFu;
    if (n == 0) break;
    if (op == kOpDecorate && n >= 4 && words[i + 2] == kDecorationBinding)
      count = std::max(count, words[i + 3] + 1);
    i += n;
  }
  return count;
}

std::vector<VkDescriptorType> spirv_binding_types(std::span<const uint32_t> words) {
  constexpr uint32_t kOpTypeImage = 25, kOpTypeSampledImage = 27, kOpTypePointer = 32;
  constexpr uint32_t kOpVariable = 59, kOpDecorate = 71, kDecorationBinding = 33, kDimBuffer = 5;
  std::map<uint32_t, uint32_t> binding_of_var, pointee_of_ptr, type_of_var;
  std::set<uint32_t> texel_images;  // OpTypeImage Dim Buffer, Sampled 1: a `textureBuffer`
  for (std::size_t i = 5; i < words.size();) {
    const uint32_t n = words[i] >> 16, op = words[i] & 0xFFFFu;
    if (n == 0 || i + n > words.size()) break;
    if (op == kOpDecorate && n >= 4 && words[i + 2] == kDecorationBinding)
      binding_of_var[words[i + 1]] = words[i + 3];
    else if (op == kOpTypePointer && n >= 4)
      pointee_of_ptr[words[i + 1]] = words[i + 3];
    else if (op == kOpVariable && n >= 4)
      type_of_var[words[i + 2]] = words[i + 1];
    else if (op == kOpTypeImage && n >= 9 && words[i + 3] == kDimBuffer && words[i + 7] == 1)
      texel_images.insert(words[i + 1]);
    else if (op == kOpTypeSampledImage && n >= 3 && texel_images.count(words[i + 2]))
      // SPIR-V 1.6 forbids a sampled image of Dim Buffer (OpTypeSampledImage) and Mesa 25
      // warns about it in older versions, which fails every test under the validation layer.
      throw std::logic_error(
          "a kernel reads a texel buffer as a samplerBuffer; declare it a textureBuffer");
    i += n;
  }
  std::vector<VkDescriptorType> types(spirv_binding_count(words),
                                      VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
  for (const auto& [var, binding] : binding_of_var)
    if (texel_images.count(pointee_of_ptr[type_of_var[var]]))
      types.at(binding) = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
  return types;
}

KernelCache::KernelCache(Device& device, std::optional<std::filesystem::path> cache_file)
    : device_(device), cache_(std::make_unique<PipelineCache>(device, std::move(cache_file))) {}

void KernelCache::build(const std::vector<KernelKey>& keys, const ProgressFn& progress) {
  // Distinct pipelines not built yet (a step dispatches most kernels once per layer).
  std::vector<KernelKey> missing;
  for (const auto& k : std::set<KernelKey>(keys.begin(), keys.end()))
    if (!pipelines_.count(k)) missing.push_back(k);
  report_progress(progress, "compile", 0, missing.size());
  for (std::size_t i = 0; i < missing.size(); ++i) {
    get(missing[i].first, missing[i].second);
    report_progress(progress, "compile", i + 1, missing.size());
  }
}

KernelCache::~KernelCache() {
  if (device_.work_in_flight()) return;  // its pipelines may still run (see ~Buffer)
  VkDevice dev = device_.handle();
  for (auto& [key, p] : pipelines_) {
    device_.vk().vkDestroyPipeline(dev, p.pipeline, nullptr);
    device_.vk().vkDestroyPipelineLayout(dev, p.layout, nullptr);
    device_.vk().vkDestroyDescriptorSetLayout(dev, p.set_layout, nullptr);
  }
  for (auto& [id, m] : modules_) device_.vk().vkDestroyShaderModule(dev, m, nullptr);
}

void KernelCache::check_limits(KernelId kernel, const std::vector<uint32_t>& spec,
                               const std::vector<VkDescriptorType>& bindings) const {
  // Refused before the driver sees it: a device (or a device profile) whose limits the kernel
  // exceeds gets one line naming the limit, not undefined behaviour. Every kernel sizes its
  // workgroup by specialization constants 0-2 (local_size_*_id); a dimension not given is 1.
  std::array<uint32_t, 3> local{1, 1, 1};
  for (std::size_t i = 0; i < 3 && i < spec.size(); ++i) local[i] = spec[i];
  const auto storage = static_cast<uint32_t>(
      std::count(bindings.begin(), bindings.end(), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER));
  if (auto why = kernel_limit_violation(device_.info(), local, storage))
    throw std::invalid_argument("kernel " + std::string(kernel_name(kernel)) + " needs " + *why);
}

const Pipeline& KernelCache::get(KernelId kernel, const std::vector<uint32_t>& spec) {
  auto key = std::make_pair(kernel, spec);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  VkDevice dev = device_.handle();
  const std::string what = "building kernel " + std::string(kernel_name(kernel));
  const auto words = kernel_spirv(kernel);

  VkShaderModule& module = modules_[kernel];
  if (!module) {
    VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mci.codeSize = words.size_bytes();
    mci.pCode = words.data();
    vk_check(device_.vk().vkCreateShaderModule(dev, &mci, nullptr, &module), "vkCreateShaderModule",
             what);
  }

  Pipeline p;
  p.binding_types = spirv_binding_types(words);
  p.binding_count = static_cast<uint32_t>(p.binding_types.size());
  check_limits(kernel, spec, p.binding_types);
  std::vector<VkDescriptorSetLayoutBinding> bindings(p.binding_count);
  for (uint32_t b = 0; b < p.binding_count; ++b)
    bindings[b] = {b, p.binding_types[b], 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.bindingCount = p.binding_count;
  dl.pBindings = bindings.data();
  vk_check(device_.vk().vkCreateDescriptorSetLayout(dev, &dl, nullptr, &p.set_layout),
           "vkCreateDescriptorSetLayout", what);

  // 128 bytes is the push-constant size every Vulkan device guarantees; shaders/push_constants.h
  // static_asserts that no block exceeds it.
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p.set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  vk_check(device_.vk().vkCreatePipelineLayout(dev, &pl, nullptr, &p.layout),
           "vkCreatePipelineLayout", what);

  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (uint32_t i = 0; i < spec.size(); ++i)
    entries[i] = {i, static_cast<uint32_t>(i * sizeof(uint32_t)), sizeof(uint32_t)};
  VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(),
                          spec.size() * sizeof(uint32_t), spec.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
  ci.layout = p.layout;
  // Creation feedback (core in Vulkan 1.3) says whether the pipeline cache had the pipeline. An
  // application's device may have been created for an older API version than its instance
  // reports, so only devices remat created use it.
  VkPipelineCreationFeedback feedback{};
  VkPipelineCreationFeedbackCreateInfo fci{
      VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
  fci.pPipelineCreationFeedback = &feedback;
  if (device_.owned() &&
      std::min(device_.info().api_version, device_.instance().api_version()) >= VK_API_VERSION_1_3)
    ci.pNext = &fci;
  vk_check(
      device_.vk().vkCreateComputePipelines(dev, cache_->handle(), 1, &ci, nullptr, &p.pipeline),
      "vkCreateComputePipelines", what);
  if ((feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
      (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT))
    ++cache_hits_;
  return pipelines_.emplace(std::move(key), p).first->second;
}

}  // namespace remat
