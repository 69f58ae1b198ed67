// Finds the system's Vulkan loader at run time (dlopen), so remat links against no Vulkan library
// and exports no Vulkan symbol: only its vkGetInstanceProcAddr is taken from it.
#pragma once

#include <span>

#include <vulkan/vulkan_core.h>

namespace remat {

// vkGetInstanceProcAddr of libvulkan.so.1 (else libvulkan.so), opened once per process and kept
// open. Throws VulkanError naming the Debian packages to install when neither can be opened.
PFN_vkGetInstanceProcAddr system_vulkan_loader();

// The same search over `libraries`, in order, without caching (tests name absent libraries).
PFN_vkGetInstanceProcAddr open_vulkan_loader(std::span<const char* const> libraries);

}  // namespace remat
