#include "runtime/vulkan/device.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "runtime/vulkan/error.h"

namespace remat {

std::unique_ptr<Device> Device::open(std::string_view selector, const InstanceOptions& options) {
  std::unique_ptr<Device> d(new Device());
  d->instance_ = Instance::create(options);
  auto physicals = d->instance_->physical_devices();
  auto snapshots = d->instance_->snapshots();
  std::string chosen_by(selector);
  if (chosen_by.empty())
    if (const char* env = std::getenv("REMAT_DEVICE")) chosen_by = env;
  std::string why;
  auto index = choose_device(snapshots, chosen_by, &why);
  if (!index) {
    if (snapshots.empty())
      why += ": install Mesa's software driver lavapipe (Debian package 'mesa-vulkan-drivers')";
    else if (!chosen_by.empty())
      why += " (set REMAT_DEVICE to an index or name from 'remat devices')";
    throw VulkanError(why, VK_ERROR_INITIALIZATION_FAILED);
  }
  d->adopt_physical(physicals[*index], snapshots[*index]);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = d->plan_.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;

  VkPhysicalDevice16BitStorageFeatures f16s{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  f16s.storageBuffer16BitAccess = d->plan_.enable_storage_buffer_16bit;
  VkPhysicalDeviceShaderFloat16Int8Features f16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  f16.shaderFloat16 = d->plan_.enable_shader_float16;
  VkPhysicalDeviceBufferDeviceAddressFeatures bda{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
  bda.bufferDeviceAddress = d->plan_.enable_buffer_device_address;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.pNext = &f16s;
  void** tail = &f16s.pNext;
  if (d->plan_.enable_shader_float16) {
    *tail = &f16;
    tail = &f16.pNext;
  }
  if (d->plan_.enable_buffer_device_address) {
    *tail = &bda;
    tail = &bda.pNext;
  }

  std::vector<const char*> exts;
  for (const auto& e : d->plan_.extensions) exts.push_back(e.c_str());
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &feats;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  dci.ppEnabledExtensionNames = exts.data();
  vk_check(d->instance_->vk().vkCreateDevice(d->physical_, &dci, nullptr, &d->device_),
           "vkCreateDevice", "opening " + d->info_.name);
  d->owned_ = true;
  // First, so the destructor can destroy the device if loading the rest fails.
  d->vk_.vkDestroyDevice = reinterpret_cast<PFN_vkDestroyDevice>(
      d->instance_->vk().vkGetDeviceProcAddr(d->device_, "vkDestroyDevice"));
  d->vk_ = load_device_functions(d->instance_->vk(), d->device_);
  d->vk_.vkGetDeviceQueue(d->device_, d->plan_.queue_family, 0, &d->queue_);
  d->create_pool_and_fence();
  return d;
}

namespace {

std::invalid_argument null_handle(const char* field) {
  return std::invalid_argument(std::string("ExternalVulkan.") + field + " is null");
}

// The application's queue family must exist and run compute shaders.
void check_queue_family(const InstanceFunctions& vk, VkPhysicalDevice pd, uint32_t family,
                        const std::string& device_name) {
  uint32_t n = 0;
  vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  if (family >= n)
    throw std::invalid_argument("ExternalVulkan.queue_family_index " + std::to_string(family) +
                                " is out of range: " + device_name + " has " + std::to_string(n) +
                                " queue families");
  if (!(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    throw std::invalid_argument("ExternalVulkan.queue_family_index " + std::to_string(family) +
                                " of " + device_name + " has no compute support");
}

}  // namespace

std::unique_ptr<Device> Device::wrap(const ExternalVulkan& ext) {
  if (!ext.get_instance_proc_addr) throw null_handle("get_instance_proc_addr");
  if (!ext.instance) throw null_handle("instance");
  if (!ext.physical_device) throw null_handle("physical_device");
  if (!ext.device) throw null_handle("device");
  if (!ext.queue) throw null_handle("queue");
  std::unique_ptr<Device> d(new Device());
  d->instance_ = Instance::wrap(ext.get_instance_proc_addr, ext.instance,
                                InstanceOptions::from_environment().device_profile);
  const auto physicals = d->instance_->physical_devices();
  const auto it = std::find(physicals.begin(), physicals.end(), ext.physical_device);
  if (it == physicals.end())
    throw std::invalid_argument(
        "ExternalVulkan.physical_device is not one of ExternalVulkan.instance's physical devices");
  const auto index = static_cast<uint32_t>(it - physicals.begin());
  const PhysicalDeviceSnapshot info = d->instance_->snapshot(ext.physical_device, index);
  check_queue_family(d->instance_->vk(), ext.physical_device, ext.queue_family_index, info.name);
  d->adopt_physical(ext.physical_device, info);
  // The application chose the queue and what the device enables; remat's kernels need nothing
  // beyond core Vulkan 1.1, so the plan records that it enabled nothing.
  d->plan_.queue_family = ext.queue_family_index;
  d->plan_.extensions.clear();
  d->plan_.enable_storage_buffer_16bit = false;
  d->plan_.enable_shader_float16 = false;
  d->plan_.enable_buffer_device_address = false;
  d->vk_ = load_device_functions(d->instance_->vk(), ext.device);
  d->device_ = ext.device;
  d->queue_ = ext.queue;
  d->create_pool_and_fence();
  return d;
}

void Device::adopt_physical(VkPhysicalDevice physical, const PhysicalDeviceSnapshot& info) {
  physical_ = physical;
  // Everything remat allocates and plans reads the limit from here, so the clamp reaches all.
  info_ = clamp_max_memory_allocation_size(info, max_allocation_from_env());
  plan_ = plan_device(info_);
  ledger_.set_device_name(info_.name);
  instance_->vk().vkGetPhysicalDeviceMemoryProperties(physical_, &memory_props_);
}

void Device::create_pool_and_fence() {
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = plan_.queue_family;
  vk_check(vk_.vkCreateCommandPool(device_, &pci, nullptr, &pool_), "vkCreateCommandPool");
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  vk_check(vk_.vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");
}

namespace {
std::string seconds(uint64_t ns) {
  return std::to_string(ns / 1000000000) + " s";
}
}  // namespace

Device::~Device() {
  if (!device_) return;
  // vkDestroyFence is loaded only with all of remat's device functions; before that remat has
  // created nothing on the device.
  // A submission that never finished (a timed-out wait, waited for again by the executor) may
  // still run: destroying what it uses would crash the driver's threads, so all of it is left.
  if (vk_.vkDestroyFence && work_in_flight()) return;
  if (vk_.vkDestroyFence) {
    // Only remat's own work is waited for on an application's device; the rest of its queue is
    // not remat's business.
    if (owned_)
      vk_.vkDeviceWaitIdle(device_);
    else if (in_flight_)
      vk_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, wait_timeout_ns_);
    if (fence_) vk_.vkDestroyFence(device_, fence_, nullptr);
    if (pool_) vk_.vkDestroyCommandPool(device_, pool_, nullptr);
  }
  if (owned_ && vk_.vkDestroyDevice) vk_.vkDestroyDevice(device_, nullptr);
}

uint32_t Device::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                             VkMemoryPropertyFlags preferred) const {
  for (int pass = 0; pass < 2; ++pass) {
    const VkMemoryPropertyFlags want = pass == 0 ? required | preferred : required;
    for (uint32_t i = 0; i < memory_props_.memoryTypeCount; ++i)
      if ((type_bits & (1u << i)) && (memory_props_.memoryTypes[i].propertyFlags & want) == want)
        return i;
  }
  throw VulkanError("no memory type with the required properties on " + info_.name,
                    VK_ERROR_FEATURE_NOT_PRESENT);
}

void Device::submit_and_wait(const std::function<void(VkCommandBuffer)>& record) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  vk_check(vk_.vkAllocateCommandBuffers(device_, &ai, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  try {
    vk_check(vk_.vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
    record(cb);
    vk_check(vk_.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    submit_and_wait(cb);
  } catch (...) {
    // A submission whose wait timed out may still run: its buffer goes with the pool, which the
    // destructor frees after waiting for the device.
    if (!in_flight_) vk_.vkFreeCommandBuffers(device_, pool_, 1, &cb);
    throw;
  }
  vk_.vkFreeCommandBuffers(device_, pool_, 1, &cb);
}

bool Device::finish_timed_out_work() {
  if (in_flight_ &&
      vk_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, wait_timeout_ns_) == VK_SUCCESS)
    in_flight_ = false;
  return !in_flight_;
}

void Device::submit_and_wait(VkCommandBuffer cb, const std::function<uint64_t()>& progress) {
  // Resetting the fence of a submission that still runs, or submitting work beside it, is what
  // Vulkan forbids: wait for it first, or refuse.
  if (!finish_timed_out_work())
    throw VulkanError("waiting for " + info_.name + ": an earlier submission has not finished in " +
                          seconds(2 * wait_timeout_ns_) + "; the device takes no more work",
                      VK_TIMEOUT);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  vk_check(vk_.vkResetFences(device_, 1, &fence_), "vkResetFences");
  vk_check(vk_.vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit",
           "submitting work to " + info_.name);
  in_flight_ = true;
  const auto wait = [&] {
    return vk_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, wait_timeout_ns_);
  };
  const VkResult r = wait_while_progressing(wait, progress);
  if (r == VK_SUCCESS) in_flight_ = false;
  if (r == VK_TIMEOUT)
    throw VulkanError("waiting for " + info_.name + ": no progress in " + seconds(wait_timeout_ns_),
                      VK_TIMEOUT);
  vk_check(r, "vkWaitForFences", "waiting for " + info_.name);
}

VkResult wait_while_progressing(const std::function<VkResult()>& wait,
                                const std::function<uint64_t()>& progress) {
  uint64_t seen = progress ? progress() : 0;
  for (;;) {
    const VkResult r = wait();
    if (r != VK_TIMEOUT || !progress) return r;
    const uint64_t now = progress();
    if (now == seen) return r;
    seen = now;
  }
}

bool Device::work_in_flight() {
  if (in_flight_ && vk_.vkGetFenceStatus(device_, fence_) == VK_SUCCESS) in_flight_ = false;
  return in_flight_;
}

std::string Device::summary() const {
  std::string s = info_.name + " [" + std::string(device_kind_name(info_.kind)) + ", Vulkan " +
                  format_api_version(info_.api_version);
  if (!info_.driver_info.empty()) s += ", " + info_.driver_info;
  s += "]; subgroup " + std::to_string(info_.subgroup_size) + ", shared " +
       std::to_string(info_.max_shared_memory_bytes / 1024) + " KiB, max binding " +
       std::to_string(info_.max_storage_buffer_range >> 20) + " MiB";
  if (plan_.quirks.barriers_are_expensive) s += ", register-tiled kernels";
  if (plan_.quirks.texel_fetch_beats_storage_loads) s += ", texel-fetch matmuls";
  return s;
}

}  // namespace remat
