// The Vulkan functions remat calls, as plain tables of pointers: one per Instance, one per Device.
// remat defines no global Vulkan symbol, so an application that links libvulkan or its own volk
// next to remat's static library shares nothing with it but the loader itself.
#pragma once

#include <vulkan/vulkan_core.h>

namespace remat {

// Functions the loader answers with a null instance.
#define REMAT_VK_GLOBAL_FUNCTIONS(X) \
  X(vkCreateInstance)                \
  X(vkEnumerateInstanceLayerProperties)

// Instance-level functions every Vulkan 1.1 instance has.
#define REMAT_VK_INSTANCE_FUNCTIONS(X)        \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceMemoryProperties2)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// May be null: a 1.0 loader has no vkEnumerateInstanceVersion, and the debug-utils functions
// exist only where VK_EXT_debug_utils was enabled.
#define REMAT_VK_OPTIONAL_INSTANCE_FUNCTIONS(X) \
  X(vkEnumerateInstanceVersion)                 \
  X(vkCreateDebugUtilsMessengerEXT)             \
  X(vkDestroyDebugUtilsMessengerEXT)

#define REMAT_VK_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice)                 \
  X(vkGetDeviceQueue)                \
  X(vkDeviceWaitIdle)                \
  X(vkQueueSubmit)                   \
  X(vkCreateCommandPool)             \
  X(vkDestroyCommandPool)            \
  X(vkAllocateCommandBuffers)        \
  X(vkFreeCommandBuffers)            \
  X(vkBeginCommandBuffer)            \
  X(vkEndCommandBuffer)              \
  X(vkCreateFence)                   \
  X(vkDestroyFence)                  \
  X(vkResetFences)                   \
  X(vkWaitForFences)                 \
  X(vkGetFenceStatus)                \
  X(vkCreateEvent)                   \
  X(vkDestroyEvent)                  \
  X(vkResetEvent)                    \
  X(vkGetEventStatus)                \
  X(vkCmdSetEvent)                   \
  X(vkCreateBuffer)                  \
  X(vkDestroyBuffer)                 \
  X(vkGetBufferMemoryRequirements)   \
  X(vkAllocateMemory)                \
  X(vkFreeMemory)                    \
  X(vkBindBufferMemory)              \
  X(vkMapMemory)                     \
  X(vkUnmapMemory)                   \
  X(vkCreateBufferView)              \
  X(vkDestroyBufferView)             \
  X(vkCreateShaderModule)            \
  X(vkDestroyShaderModule)           \
  X(vkCreateDescriptorSetLayout)     \
  X(vkDestroyDescriptorSetLayout)    \
  X(vkCreatePipelineLayout)          \
  X(vkDestroyPipelineLayout)         \
  X(vkCreateComputePipelines)        \
  X(vkCreatePipelineCache)           \
  X(vkDestroyPipelineCache)          \
  X(vkGetPipelineCacheData)          \
  X(vkDestroyPipeline)               \
  X(vkCreateDescriptorPool)          \
  X(vkDestroyDescriptorPool)         \
  X(vkAllocateDescriptorSets)        \
  X(vkUpdateDescriptorSets)          \
  X(vkCreateQueryPool)               \
  X(vkDestroyQueryPool)              \
  X(vkGetQueryPoolResults)           \
  X(vkCmdPipelineBarrier)            \
  X(vkCmdCopyBuffer)                 \
  X(vkCmdFillBuffer)                 \
  X(vkCmdResetQueryPool)             \
  X(vkCmdWriteTimestamp)             \
  X(vkCmdBindPipeline)               \
  X(vkCmdBindDescriptorSets)         \
  X(vkCmdPushConstants)              \
  X(vkCmdDispatch)

#define REMAT_VK_MEMBER(name) PFN_##name name = nullptr;

struct InstanceFunctions {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  REMAT_VK_GLOBAL_FUNCTIONS(REMAT_VK_MEMBER)
  REMAT_VK_INSTANCE_FUNCTIONS(REMAT_VK_MEMBER)
  REMAT_VK_OPTIONAL_INSTANCE_FUNCTIONS(REMAT_VK_MEMBER)
};

struct DeviceFunctions {
  REMAT_VK_DEVICE_FUNCTIONS(REMAT_VK_MEMBER)
};

#undef REMAT_VK_MEMBER

// Each loader throws VulkanError naming the first required function it could not find.
// The global functions (and vkEnumerateInstanceVersion) through `get`.
InstanceFunctions load_global_functions(PFN_vkGetInstanceProcAddr get);
// `global` plus `instance`'s functions (it must be a Vulkan 1.1 instance).
InstanceFunctions load_instance_functions(const InstanceFunctions& global, VkInstance instance);
// `device`'s functions, through the instance's vkGetDeviceProcAddr.
DeviceFunctions load_device_functions(const InstanceFunctions& instance, VkDevice device);

}  // namespace remat
