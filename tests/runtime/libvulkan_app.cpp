// An application linked against libvulkan itself (the real vkXxx functions, prototypes on, no
// VK_NO_PROTOTYPES) that also uses remat: both talk to Vulkan in one process, and neither's calls
// reach the other's symbols. Exit status 0 when everything checks out.
#include <vulkan/vulkan.h>

#include <cstdio>
#include <vector>

#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/device.h"

namespace {

int g_failures = 0;

void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++g_failures;
}

// The application's own instance, through libvulkan's exported functions.
bool app_instance_works() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (vkCreateInstance(&ci, nullptr, &instance) != VK_SUCCESS) return false;
  uint32_t n = 0;
  const bool ok = vkEnumeratePhysicalDevices(instance, &n, nullptr) == VK_SUCCESS && n > 0;
  vkDestroyInstance(instance, nullptr);
  return ok;
}

}  // namespace

int main() {
  try {
    uint32_t version = 0;
    check(vkEnumerateInstanceVersion(&version) == VK_SUCCESS && version >= VK_API_VERSION_1_1,
          "libvulkan's vkEnumerateInstanceVersion reports Vulkan 1.1 or newer");
    check(app_instance_works(), "the application's instance lists a physical device");
    {
      auto device = remat::Device::open();
      const std::vector<uint32_t> data = {7, 11, 13, 0xFFFFFFFFu};
      remat::Buffer b(*device, data.size() * 4, remat::MemoryCategory::persistent, "roundtrip");
      remat::upload(*device, b, std::span<const uint32_t>(data));
      check(remat::download<uint32_t>(*device, b, data.size()) == data,
            "remat's device round-trips a buffer");
      check(app_instance_works(), "the application's instance still works while remat's is open");
    }
    check(app_instance_works(), "the application's instance works after remat's is gone");
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  return g_failures == 0 ? 0 : 1;
}
