#include "runtime/vulkan/instance.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "runtime/vulkan/error.h"
#include "runtime/vulkan/loader.h"

namespace remat {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
constexpr const char* kNoDriverHint =
    "install the Vulkan loader and Mesa's software driver lavapipe (Debian packages "
    "'libvulkan1' and 'mesa-vulkan-drivers')";

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                void* user) {
  std::string msg =
      (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error: " : "warning: ";
  msg += data && data->pMessage ? data->pMessage : "(no message)";
  static_cast<Instance*>(user)->record_validation_message(std::move(msg));
  return VK_FALSE;
}

bool layer_available(const InstanceFunctions& vk, const char* name) {
  uint32_t n = 0;
  vk.vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vk.vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

uint32_t loader_api_version(const InstanceFunctions& vk) {
  uint32_t v = VK_API_VERSION_1_0;  // a 1.0 loader has no vkEnumerateInstanceVersion
  if (vk.vkEnumerateInstanceVersion) vk.vkEnumerateInstanceVersion(&v);
  return v;
}

DeviceKind kind_of(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return DeviceKind::discrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return DeviceKind::integrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return DeviceKind::virtual_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return DeviceKind::cpu;
    default:
      return DeviceKind::other;
  }
}

}  // namespace

InstanceOptions InstanceOptions::from_environment() {
  InstanceOptions o;
  const char* v = std::getenv("REMAT_VALIDATION");
  o.validation = v && std::strcmp(v, "0") != 0 && *v != '\0';
  if (const char* p = std::getenv("REMAT_DEVICE_PROFILE")) o.device_profile = p;
  return o;
}

std::shared_ptr<Instance> Instance::create(const InstanceOptions& options) {
  std::shared_ptr<Instance> inst(new Instance());
  // Before anything is created: a misspelt profile is the user's to fix, not a Vulkan failure.
  if (!options.device_profile.empty())
    inst->profile_ = &remat::device_profile(options.device_profile);
  inst->vk_ = load_global_functions(system_vulkan_loader());
  const uint32_t loader_version = loader_api_version(inst->vk_);
  if (loader_version < VK_API_VERSION_1_1)
    throw VulkanError("the Vulkan loader supports only " + format_api_version(loader_version) +
                          "; remat needs 1.1: " + kNoDriverHint,
                      VK_ERROR_INCOMPATIBLE_DRIVER);
  inst->api_version_ = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "remat";
  app.pEngineName = "remat";
  app.apiVersion = inst->api_version_;

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  const bool validate = options.validation && layer_available(inst->vk_, kValidationLayer);
  if (validate) {
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VkResult r = inst->vk_.vkCreateInstance(&ci, nullptr, &inst->instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw VulkanError(std::string("no Vulkan driver found: ") + kNoDriverHint, r);
  vk_check(r, "vkCreateInstance", "creating the Vulkan instance");
  inst->owned_ = true;
  // First, so the destructor can destroy the instance if loading the rest fails.
  inst->vk_.vkDestroyInstance = reinterpret_cast<PFN_vkDestroyInstance>(
      inst->vk_.vkGetInstanceProcAddr(inst->instance_, "vkDestroyInstance"));
  inst->vk_ = load_instance_functions(inst->vk_, inst->instance_);

  if (validate) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mi.pfnUserCallback = on_debug_message;
    mi.pUserData = inst.get();
    if (!inst->vk_.vkCreateDebugUtilsMessengerEXT)
      throw VulkanError(
          "the validation layer is enabled but vkCreateDebugUtilsMessengerEXT is missing",
          VK_ERROR_EXTENSION_NOT_PRESENT);
    vk_check(
        inst->vk_.vkCreateDebugUtilsMessengerEXT(inst->instance_, &mi, nullptr, &inst->messenger_),
        "vkCreateDebugUtilsMessengerEXT", "enabling validation messages");
  }
  return inst;
}

std::shared_ptr<Instance> Instance::wrap(PFN_vkGetInstanceProcAddr get, VkInstance instance,
                                         std::string_view device_profile) {
  if (!get)
    throw std::invalid_argument("wrapping a Vulkan instance: vkGetInstanceProcAddr is null");
  if (!instance)
    throw std::invalid_argument("wrapping a Vulkan instance: the instance is VK_NULL_HANDLE");
  std::shared_ptr<Instance> inst(new Instance());
  if (!device_profile.empty()) inst->profile_ = &remat::device_profile(device_profile);
  inst->vk_ = load_instance_functions(load_global_functions(get), instance);
  inst->instance_ = instance;
  inst->api_version_ = std::min<uint32_t>(loader_api_version(inst->vk_), VK_API_VERSION_1_3);
  return inst;
}

Instance::~Instance() {
  if (!owned_) return;
  if (messenger_) vk_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (vk_.vkDestroyInstance) vk_.vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
  uint32_t n = 0;
  vk_check(vk_.vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> pds(n);
  vk_check(vk_.vkEnumeratePhysicalDevices(instance_, &n, pds.data()), "vkEnumeratePhysicalDevices");
  pds.resize(n);
  return pds;
}

PhysicalDeviceSnapshot Instance::snapshot(VkPhysicalDevice pd, uint32_t index) const {
  PhysicalDeviceSnapshot s;
  s.index = index;

  uint32_t n_ext = 0;
  vk_.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, nullptr);
  std::vector<VkExtensionProperties> exts(n_ext);
  vk_.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, exts.data());
  for (const auto& e : exts) s.extensions.emplace_back(e.extensionName);
  std::sort(s.extensions.begin(), s.extensions.end());

  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maint3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  subgroup.pNext = &maint3;
  const bool has_driver_props = s.has_extension("VK_KHR_driver_properties");
  if (has_driver_props) maint3.pNext = &driver;
  vk_.vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  const VkPhysicalDeviceLimits& lim = p.limits;

  s.name = p.deviceName;
  s.kind = kind_of(p.deviceType);
  s.vendor_id = p.vendorID;
  s.api_version = p.apiVersion;
  s.driver_version = p.driverVersion;
  if (has_driver_props) {
    s.driver_name = driver.driverName;
    s.driver_info = driver.driverInfo;
  }
  s.max_storage_buffer_range = lim.maxStorageBufferRange;
  s.max_memory_allocation_size = maint3.maxMemoryAllocationSize;
  s.max_memory_allocation_count = lim.maxMemoryAllocationCount;
  s.min_storage_buffer_offset_alignment = lim.minStorageBufferOffsetAlignment;
  s.max_texel_buffer_elements = lim.maxTexelBufferElements;
  s.min_texel_buffer_offset_alignment = lim.minTexelBufferOffsetAlignment;
  s.max_shared_memory_bytes = lim.maxComputeSharedMemorySize;
  s.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    s.max_workgroup_size[i] = lim.maxComputeWorkGroupSize[i];
    s.max_workgroup_count[i] = lim.maxComputeWorkGroupCount[i];
  }
  s.max_push_constants_bytes = lim.maxPushConstantsSize;
  s.max_storage_buffers_per_stage = lim.maxPerStageDescriptorStorageBuffers;
  s.timestamps = lim.timestampComputeAndGraphics;
  s.timestamp_period_ns = lim.timestampPeriod;

  const bool compute_subgroups = subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
  s.subgroup_size = subgroup.subgroupSize;
  auto op = [&](VkSubgroupFeatureFlagBits bit) {
    return compute_subgroups && (subgroup.supportedOperations & bit);
  };
  s.subgroup_arithmetic = op(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  s.subgroup_ballot = op(VK_SUBGROUP_FEATURE_BALLOT_BIT);
  s.subgroup_vote = op(VK_SUBGROUP_FEATURE_VOTE_BIT);
  s.subgroup_shuffle = op(VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  s.subgroup_quad = op(VK_SUBGROUP_FEATURE_QUAD_BIT);

  // Features: 16-bit storage (core 1.1), float16 (1.2 or the extension), buffer device address.
  VkPhysicalDevice16BitStorageFeatures f16s{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceBufferDeviceAddressFeatures bda{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.pNext = &f16s;
  void** tail = &f16s.pNext;
  const bool vk12 = p.apiVersion >= VK_API_VERSION_1_2;
  if (vk12 || s.has_extension("VK_KHR_shader_float16_int8")) {
    *tail = &f16;
    tail = &f16.pNext;
  }
  if (vk12 || s.has_extension("VK_KHR_buffer_device_address")) {
    *tail = &bda;
    tail = &bda.pNext;
  }
  vk_.vkGetPhysicalDeviceFeatures2(pd, &feats);
  s.storage_buffer_16bit = f16s.storageBuffer16BitAccess;
  s.shader_float16 = f16.shaderFloat16;
  s.buffer_device_address = bda.bufferDeviceAddress;
  s.cooperative_matrix = s.has_extension("VK_KHR_cooperative_matrix");
  s.push_descriptors = s.has_extension("VK_KHR_push_descriptor");
  s.memory_budget = s.has_extension("VK_EXT_memory_budget");

  uint32_t n_q = 0;
  vk_.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_q, nullptr);
  std::vector<VkQueueFamilyProperties> qs(n_q);
  vk_.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_q, qs.data());
  for (uint32_t i = 0; i < n_q; ++i) {
    if (!(qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (!s.compute_queue) s.compute_queue_family = i;
    s.compute_queue = true;
    // A compute-only family is the dedicated (async) compute queue on discrete GPUs: prefer it.
    if (!(qs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
      s.compute_queue_family = i;
      break;
    }
  }

  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 mem{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  if (s.memory_budget) mem.pNext = &budget;
  vk_.vkGetPhysicalDeviceMemoryProperties2(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryProperties.memoryHeapCount; ++i) {
    MemoryHeapInfo h;
    h.size_bytes = mem.memoryProperties.memoryHeaps[i].size;
    h.device_local = mem.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    h.budget_bytes = s.memory_budget ? budget.heapBudget[i] : 0;
    s.heaps.push_back(h);
  }
  // Here, before plan_device or any other reader sees the snapshot.
  return profile_ ? apply_device_profile(std::move(s), *profile_) : s;
}

std::vector<PhysicalDeviceSnapshot> Instance::snapshots() const {
  std::vector<PhysicalDeviceSnapshot> out;
  auto pds = physical_devices();
  for (uint32_t i = 0; i < pds.size(); ++i) out.push_back(snapshot(pds[i], i));
  return out;
}

std::vector<std::string> Instance::validation_messages() const {
  std::lock_guard lock(mutex_);
  return messages_;
}

std::size_t Instance::validation_message_count() const {
  std::lock_guard lock(mutex_);
  return messages_.size();
}

void Instance::record_validation_message(std::string msg) {
  std::lock_guard lock(mutex_);
  messages_.push_back(std::move(msg));
}

}  // namespace remat
