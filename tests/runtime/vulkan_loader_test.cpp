// remat finds libvulkan itself (dlopen), and says which packages to install when it cannot.
#include <catch2/catch.hpp>

#include <array>

#include "runtime/vulkan/error.h"
#include "runtime/vulkan/loader.h"

using namespace remat;

TEST_CASE("the system Vulkan loader is opened once and answers global functions") {
  const PFN_vkGetInstanceProcAddr get = system_vulkan_loader();
  REQUIRE(get != nullptr);
  CHECK(system_vulkan_loader() == get);
  CHECK(get(VK_NULL_HANDLE, "vkCreateInstance") != nullptr);
  CHECK(get(VK_NULL_HANDLE, "vkNoSuchFunction") == nullptr);
}

TEST_CASE("a missing Vulkan loader names the Debian packages") {
  constexpr std::array<const char*, 2> absent = {"libremat-absent-a.so.1", "libremat-absent-b.so"};
  CHECK_THROWS_AS(open_vulkan_loader(absent), VulkanError);
  CHECK_THROWS_WITH(open_vulkan_loader(absent),
                    Catch::Contains("no Vulkan loader found (tried libremat-absent-a.so.1, "
                                    "libremat-absent-b.so)") &&
                        Catch::Contains("'libvulkan1' and 'mesa-vulkan-drivers'"));
  // A library without vkGetInstanceProcAddr is no loader either.
  constexpr std::array<const char*, 1> not_vulkan = {"libm.so.6"};
  CHECK_THROWS_WITH(open_vulkan_loader(not_vulkan),
                    Catch::Contains("libm.so.6 (no vkGetInstanceProcAddr)"));
}
