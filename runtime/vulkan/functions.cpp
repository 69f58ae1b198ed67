#include "runtime/vulkan/functions.h"

#include <string>

#include "runtime/vulkan/error.h"

namespace remat {

namespace {

// A null pointer for a function remat cannot run without is an error that names it, not a crash
// at its first call.
template <class Fn>
void require(Fn fn, const char* name, const char* where) {
  if (!fn)
    throw VulkanError(std::string(where) + " has no " + name + ": remat needs Vulkan 1.1",
                      VK_ERROR_INITIALIZATION_FAILED);
}

// `get` is vkGetInstanceProcAddr or vkGetDeviceProcAddr, `owner` the handle it is asked about.
template <class Fn, class Get, class Handle>
void load(Fn& out, Get get, Handle owner, const char* name, const char* where) {
  out = reinterpret_cast<Fn>(get(owner, name));
  if (where) require(out, name, where);
}

}  // namespace

InstanceFunctions load_global_functions(PFN_vkGetInstanceProcAddr get) {
  InstanceFunctions f;
  require(get, "vkGetInstanceProcAddr", "the Vulkan loader");
  f.vkGetInstanceProcAddr = get;
  const VkInstance none = VK_NULL_HANDLE;
#define REMAT_VK_LOAD(name) load(f.name, get, none, #name, "the Vulkan loader");
  REMAT_VK_GLOBAL_FUNCTIONS(REMAT_VK_LOAD)
#undef REMAT_VK_LOAD
  load(f.vkEnumerateInstanceVersion, get, none, "vkEnumerateInstanceVersion", nullptr);
  return f;
}

InstanceFunctions load_instance_functions(const InstanceFunctions& global, VkInstance instance) {
  InstanceFunctions f = global;
  const PFN_vkGetInstanceProcAddr get = global.vkGetInstanceProcAddr;
  require(get, "vkGetInstanceProcAddr", "the Vulkan loader");
#define REMAT_VK_LOAD(name) load(f.name, get, instance, #name, "the Vulkan instance");
  REMAT_VK_INSTANCE_FUNCTIONS(REMAT_VK_LOAD)
#undef REMAT_VK_LOAD
  load(f.vkCreateDebugUtilsMessengerEXT, get, instance, "vkCreateDebugUtilsMessengerEXT", nullptr);
  load(f.vkDestroyDebugUtilsMessengerEXT, get, instance, "vkDestroyDebugUtilsMessengerEXT",
       nullptr);
  return f;
}

DeviceFunctions load_device_functions(const InstanceFunctions& instance, VkDevice device) {
  DeviceFunctions f;
  const PFN_vkGetDeviceProcAddr get = instance.vkGetDeviceProcAddr;
  require(get, "vkGetDeviceProcAddr", "the Vulkan instance");
#define REMAT_VK_LOAD(name) load(f.name, get, device, #name, "the Vulkan device");
  REMAT_VK_DEVICE_FUNCTIONS(REMAT_VK_LOAD)
#undef REMAT_VK_LOAD
  return f;
}

}  // namespace remat
