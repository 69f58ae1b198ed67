#include "runtime/vulkan/loader.h"

#include <dlfcn.h>

#include <array>
#include <string>

#include "runtime/vulkan/error.h"

namespace remat {

PFN_vkGetInstanceProcAddr open_vulkan_loader(std::span<const char* const> libraries) {
  std::string tried;
  for (const char* name : libraries) {
    // RTLD_LOCAL: the loader's symbols stay out of the global namespace, where they could
    // satisfy (or clash with) an application's own Vulkan symbols.
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      tried += (tried.empty() ? "" : ", ") + std::string(name);
      continue;
    }
    if (auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr")))
      return get;  // never closed: instances, layers and drivers it loaded outlive any one caller
    dlclose(lib);
    tried += (tried.empty() ? "" : ", ") + std::string(name) + " (no vkGetInstanceProcAddr)";
  }
  throw VulkanError("no Vulkan loader found (tried " + tried +
                        "): install the Vulkan loader and Mesa's software driver lavapipe "
                        "(Debian packages 'libvulkan1' and 'mesa-vulkan-drivers')",
                    VK_ERROR_INITIALIZATION_FAILED);
}

PFN_vkGetInstanceProcAddr system_vulkan_loader() {
  static constexpr std::array<const char*, 2> kLibraries = {"libvulkan.so.1", "libvulkan.so"};
  // A throwing initialiser leaves the static unset, so a later call searches again.
  static const PFN_vkGetInstanceProcAddr loader = open_vulkan_loader(kLibraries);
  return loader;
}

}  // namespace remat
