// A wait that times out is reported, and the work it waited for is neither freed nor overtaken
// while it may still run: the next submission waits for it first, so a device that was slow,
// not hung, goes on working. (Under a loaded CPU driver a wait of 600 s can time out; before
// this, the timed-out command buffer was freed under the device and the next submission ran
// beside it.)
#include <catch2/catch.hpp>

#include <string>

#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/error.h"
#include "tests/support/test_device.h"

using namespace remat;

TEST_CASE("a timed-out wait leaves its work running, and the next submission waits for it") {
  Device& dev = test::device();
  const uint64_t words = 64ull << 20;  // 256 MiB: filling it takes the device milliseconds
  Buffer b(dev, words * 4, MemoryCategory::persistent, "timeout test");
  const auto fill = [&](uint64_t bytes, uint32_t value) {
    dev.submit_and_wait(
        [&](VkCommandBuffer cb) { dev.vk().vkCmdFillBuffer(cb, b.handle(), 0, bytes, value); });
  };
  dev.set_wait_timeout_ns(1);
  VkResult result = VK_SUCCESS;
  std::string message;
  try {
    fill(words * 4, 0x01020304u);
  } catch (const VulkanError& e) {
    result = e.result();
    message = e.what();
  }
  dev.set_wait_timeout_ns(600ull * 1000 * 1000 * 1000);
  REQUIRE(result == VK_TIMEOUT);
  CHECK(message.find("no progress in 0 s") != std::string::npos);

  // Runs only after the timed-out fill: its 16 bytes are on top of the whole fill.
  fill(16, 0xAABBCCDDu);
  CHECK(test::read<uint32_t>(b, 5) ==
        std::vector<uint32_t>{0xAABBCCDDu, 0xAABBCCDDu, 0xAABBCCDDu, 0xAABBCCDDu, 0x01020304u});
  CHECK(test::read<uint32_t>(b, 1, (words - 1) * 4) == std::vector<uint32_t>{0x01020304u});
  CHECK(dev.finish_timed_out_work());
}
