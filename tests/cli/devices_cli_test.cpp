// `remat devices` as a user runs it: lists lavapipe (present on every machine the suite runs on)
// with its properties, in text and JSON, and keeps the error contract.
#include <catch2/catch.hpp>

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

TEST_CASE("a plan larger than the device's memory is refused before allocating, with the fix") {
  // tiny at batch 1024 stores 2.2 GiB of activations; lavapipe offers a 2 GiB heap.
  auto r = remat::test::run_remat(
      "train tiny --data /usr/share/common-licenses/GPL-3 --batch 1024 --steps 1");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: the plan needs ", 0) == 0);
  CHECK(r.err.find("of device memory; cap activation memory with --arena") != std::string::npos);
}
