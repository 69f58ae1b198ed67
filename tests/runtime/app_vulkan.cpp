#include "tests/runtime/app_vulkan.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

namespace remat::test {

namespace {

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data,
                                          void* user) {
  static_cast<std::vector<std::string>*>(user)->push_back(data->pMessage ? data->pMessage : "");
  return VK_FALSE;
}

bool has_validation_layer() {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
  });
}

}  // namespace

AppVulkan::AppVulkan() {
  REQUIRE(volkInitialize() == VK_SUCCESS);
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "an application that owns Vulkan";
  app.apiVersion = VK_API_VERSION_1_1;  // the least remat needs
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* debug_utils = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  const bool validate = has_validation_layer();
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = validate ? 1 : 0;
  ici.ppEnabledLayerNames = &layer;
  ici.enabledExtensionCount = validate ? 1 : 0;
  ici.ppEnabledExtensionNames = &debug_utils;
  REQUIRE(vkCreateInstance(&ici, nullptr, &instance_) == VK_SUCCESS);
  volkLoadInstance(instance_);
  if (validate) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mi.pfnUserCallback = on_message;
    mi.pUserData = &messages_;
    REQUIRE(vkCreateDebugUtilsMessengerEXT(instance_, &mi, nullptr, &messenger_) == VK_SUCCESS);
  }

  uint32_t n = 1;  // the first physical device is enough
  const VkResult r = vkEnumeratePhysicalDevices(instance_, &n, &physical_);
  REQUIRE((r == VK_SUCCESS || r == VK_INCOMPLETE));
  REQUIRE(physical_ != VK_NULL_HANDLE);
  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &families, nullptr);
  std::vector<VkQueueFamilyProperties> props(families);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &families, props.data());
  while (family_ < families && !(props[family_].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family_;
  REQUIRE(family_ < families);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  REQUIRE(vkCreateDevice(physical_, &dci, nullptr, &device_) == VK_SUCCESS);
  vkGetDeviceQueue(device_, family_, 0, &queue_);
}

ExternalVulkan AppVulkan::external() const {
  return {vkGetInstanceProcAddr, instance_, physical_, device_, queue_, family_};
}

bool AppVulkan::device_usable() const {
  if (vkDeviceWaitIdle(device_) != VK_SUCCESS) return false;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = 4096;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  if (vkCreateBuffer(device_, &bci, nullptr, &buffer) != VK_SUCCESS) return false;
  vkDestroyBuffer(device_, buffer, nullptr);
  return true;
}

void AppVulkan::destroy() {
  if (device_) vkDestroyDevice(device_, nullptr);
  if (messenger_) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) vkDestroyInstance(instance_, nullptr);
  device_ = VK_NULL_HANDLE;
  messenger_ = VK_NULL_HANDLE;
  instance_ = VK_NULL_HANDLE;
}

}  // namespace remat::test
