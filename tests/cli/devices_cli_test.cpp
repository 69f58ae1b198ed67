// `remat devices` as a user runs it: lists lavapipe (present on every machine the suite runs on)
// with its properties, in text and JSON, and keeps the error contract.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "base/json.h"
#include "tests/support/run_command.h"

using remat::test::run_remat;

TEST_CASE("remat devices --json lists llvmpipe with its properties") {
  auto r = run_remat("devices --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"name\":\"llvmpipe") != std::string::npos);
  for (const char* key : {"\"type\":\"cpu\"", "\"subgroup_size\":", "\"shared_memory_bytes\":",
                          "\"max_storage_buffer_range\":", "\"fp16\":", "\"cooperative_matrix\":",
                          "\"heaps\":", "\"chosen\":"})
    CHECK(r.out.find(key) != std::string::npos);
}

TEST_CASE("remat devices marks the device it would use") {
  auto r = run_remat("devices");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("* [") != std::string::npos);
  CHECK(r.out.find("remat uses [") != std::string::npos);
}

TEST_CASE("REMAT_DEVICE selects by name and rejects unknown devices") {
  auto ok = remat::test::run_command(std::string("REMAT_DEVICE=llvmpipe '") + REMAT_CLI_PATH +
                                     "' devices");
  CHECK(ok.exit_code == 0);
  auto bad = remat::test::run_command(std::string("REMAT_DEVICE=no-such-gpu '") + REMAT_CLI_PATH +
                                      "' devices");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.rfind("remat: error: ", 0) == 0);
  CHECK(bad.err.find("no-such-gpu") != std::string::npos);
}

TEST_CASE("the CLI error contract: one line, exit status 2") {
  for (const char* args : {"", "frobnicate", "devices --bogus", "devices --json=yes"}) {
    INFO("remat " << args);
    auto r = run_remat(args);
    CHECK(r.exit_code == 2);
    const auto pos = r.err.find("remat: error: ");
    REQUIRE(pos != std::string::npos);
    CHECK(r.err.find('\n', pos) == r.err.size() - 1);  // the error is the last, single line
  }
}

TEST_CASE("without a Vulkan driver, remat names the packages that provide one") {
  // VK_ICD_FILENAMES / VK_DRIVER_FILES point the loader at a driver manifest that does not exist,
  // as on a machine without mesa-vulkan-drivers.
  for (const char* args :
       {"devices", "train tiny --data /usr/share/common-licenses/GPL-3 --steps 1"}) {
    INFO(args);
    auto r = remat::test::run_command(
        std::string("VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json '") +
        REMAT_CLI_PATH + "' " + args);
    CHECK(r.exit_code == 3);  // a Vulkan fault, not bad input (2)
    CHECK(r.err.rfind("remat: error: no Vulkan driver found", 0) == 0);
    CHECK(r.err.find("mesa-vulkan-drivers") != std::string::npos);
  }
}

// The device-local bytes of the device remat would use, as `remat devices --json` reports them.
static double chosen_device_bytes() {
  auto r = run_remat("devices --json");
  REQUIRE(r.exit_code == 0);
  const remat::JsonValue j = remat::parse_json(r.out);
  const auto index = static_cast<std::size_t>(j.find("chosen")->number);
  return j.find("devices")->array.at(index).find("device_local_bytes")->number;
}

TEST_CASE("a plan larger than the device's memory is refused before allocating, with the fix") {
  // tiny at batch 1024 stores 2.2 GiB of activations: more than Mesa 22.3's 2 GiB heap, but
  // Mesa 25's lavapipe offers the host's RAM (23.5 GiB here), so the batch grows with the heap.
  const double gib = 1024.0 * 1024 * 1024;
  const auto batch = 1024 * static_cast<long>(std::ceil(chosen_device_bytes() / (2 * gib)));
  INFO("batch " << batch);
  auto r = remat::test::run_remat("train tiny --data /usr/share/common-licenses/GPL-3 --batch " +
                                  std::to_string(batch) + " --steps 1");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: the plan needs ", 0) == 0);
  CHECK(r.err.find("of device memory; cap activation memory with --arena") != std::string::npos);
}
