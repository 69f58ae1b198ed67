// A wait that times out is reported, and the work it waited for is neither freed nor overtaken
// while it may still run: the next submission waits for it first, so a device that was slow,
// not hung, goes on working. (Under a loaded CPU driver a wait of 600 s can time out; before
// this, the timed-out command buffer was freed under the device and the next submission ran
// beside it.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernels/elementwise.h"
#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/error.h"
#include "runtime/vulkan/executor.h"
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

// A step recorded once is one submission: on a CPU driver a large model's step runs for longer
// than one wait (a Qwen3.5-2B QLoRA step on lavapipe did), so a timed-out wait goes on while the
// device's progress markers advance and fails only when none was reached within it.
TEST_CASE("a wait that times out goes on while progress advances, and fails when it stalls") {
  int waits = 0;
  uint64_t markers = 0;
  const auto timing_out_until = [&](int finished_after) {
    return [&, finished_after] { return ++waits > finished_after ? VK_SUCCESS : VK_TIMEOUT; };
  };
  const auto advancing = [&] { return markers++; };
  CHECK(wait_while_progressing(timing_out_until(5), advancing) == VK_SUCCESS);
  CHECK(waits == 6);

  waits = 0;
  const auto stalled_after_two = [&] { return std::min<uint64_t>(markers++, 2); };
  markers = 0;
  CHECK(wait_while_progressing(timing_out_until(5), stalled_after_two) == VK_TIMEOUT);
  CHECK(waits == 3);  // 0 -> 1 -> 2, then a wait that saw 2 again

  waits = 0;
  CHECK(wait_while_progressing(timing_out_until(5), {}) == VK_TIMEOUT);  // no markers: one wait
  CHECK(waits == 1);
  waits = 0;
  CHECK(wait_while_progressing([&] { return ++waits, VK_ERROR_DEVICE_LOST; }, advancing) ==
        VK_ERROR_DEVICE_LOST);
  CHECK(waits == 1);
}

TEST_CASE("an executor's progress markers are spread over its dispatches and all reached") {
  constexpr uint32_t n = 256;
  Buffer a(test::device(), n * 4, MemoryCategory::persistent, "markers");
  for (const std::size_t dispatches : {1u, 10u, 200u}) {
    std::vector<Dispatch> ds;
    for (std::size_t i = 0; i < dispatches; ++i)
      ds.push_back(kernels::fill(a.whole(), n, float(i)));
    Executor ex(test::kernels(), std::move(ds));
    CHECK(ex.progress_markers() == std::min<std::size_t>(dispatches, Executor::kProgressMarkers));
    CHECK(ex.markers_reached() == 0);
    for (int run = 0; run < 2; ++run) {  // reset before each run, all set after it
      ex.run();
      CHECK(ex.markers_reached() == ex.progress_markers());
    }
    CHECK(test::read<float>(a, 1) == std::vector<float>{float(dispatches - 1)});
  }
}
