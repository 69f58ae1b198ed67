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
  auto ok = remat::test::run_command(std::string("REMAT_DEVICE=llvmpipe '") + REMAT_CLI_PATH + "' devices");
  CHECK(ok.exit_code == 0);
  auto bad = remat::test::run_command(std::string("REMAT_DEVICE=no-such-gpu '") + REMAT_CLI_PATH + "' devices");
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
