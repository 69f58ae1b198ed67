// Buffers in several device allocations, as a user sees them: `remat plan` counts each buffer's
// allocations (text and JSON) under lavapipe's 2 GiB or REMAT_MAX_ALLOCATION, and a
// tensor larger than one allocation is one "remat: error:" line with exit status 2 from plan and
// train alike, while a model that fits pages trains under the clamp.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "base/json.h"
#include "tests/support/run_command.h"

using remat::test::run_command;

namespace {

remat::test::CommandResult run_clamped(const std::string& limit, const std::string& args) {
  return run_command("REMAT_MAX_ALLOCATION=" + limit + " '" + REMAT_CLI_PATH + "' " + args);
}

void check_one_line_error(const remat::test::CommandResult& r) {
  INFO("stderr: " << r.err << "\nstdout: " << r.out);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("remat: error: ", 0) == 0);
  CHECK(r.err.find('\n') == r.err.size() - 1);
}

}  // namespace

TEST_CASE("remat plan counts each buffer's allocations") {
  // tiny with an 8192-token vocabulary: ~30 MB persistent, a 4 MiB embedding.
  const auto r = run_clamped("8MiB", "plan tiny --vocab 8192 --batch 2 --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const remat::JsonValue doc = remat::parse_json(r.out);
  const remat::JsonValue* a = doc.find("allocations");
  REQUIRE(a);
  CHECK(a->find("max_allocation_bytes")->number == 8.0 * (1 << 20));
  CHECK(a->find("page_bytes")->number == 8.0 * (1 << 20));
  const double persistent = doc.find("persistent_bytes")->number;
  CHECK(a->find("persistent")->number == std::ceil(persistent / (8 << 20)));
  CHECK(a->find("persistent")->number >= 4);
  CHECK(a->find("total")->number ==
        a->find("persistent")->number + a->find("arena")->number + a->find("extras")->number);
  // Without the variable a device-less plan assumes lavapipe's 2 GiB and Vulkan's 4096.
  const auto plain = remat::test::run_remat("plan tiny --vocab 8192 --batch 2 --json");
  REQUIRE(plain.exit_code == 0);
  const remat::JsonValue d = remat::parse_json(plain.out);
  CHECK(d.find("allocations")->find("max_allocation_bytes")->number == double(uint64_t(1) << 31));
  CHECK(d.find("allocations")->find("max_allocation_count")->number == 4096);
  CHECK(d.find("allocations")->find("persistent")->number == 1);
  const auto text = run_clamped("8MiB", "plan tiny --vocab 8192 --batch 2");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("allocations: persistent buffer ") != std::string::npos);
  CHECK(text.out.find("each at most 8.00 MiB") != std::string::npos);
}

TEST_CASE("a tensor larger than the allocation limit is one error line and exit 2") {
  // The 8192 x 128 float embedding is 4 MiB.
  const auto r = run_clamped("2MiB", "plan tiny --vocab 8192");
  check_one_line_error(r);
  CHECK(r.err.find("'wte.weight' (4194304 bytes)") != std::string::npos);
  CHECK(r.err.find("2097152 bytes (maxMemoryAllocationSize)") != std::string::npos);
  CHECK(r.out.empty());
  const auto t = run_clamped(
      "2MiB", "train tiny --vocab 8192 --steps 1 --data /usr/share/common-licenses/GPL-3");
  check_one_line_error(t);
  CHECK(t.err.find("'wte.weight'") != std::string::npos);
  const auto bad = run_clamped("lots", "plan tiny");
  check_one_line_error(bad);
  CHECK(bad.err.find("REMAT_MAX_ALLOCATION") != std::string::npos);
}

TEST_CASE("remat train runs with its buffers in many small allocations") {
  const auto r = run_clamped("1MiB",
                             "train tiny --batch 2 --seq 32 --steps 2 --data "
                             "/usr/share/common-licenses/GPL-3");
  INFO("stderr: " << r.err << "\nstdout: " << r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("2 steps: loss") != std::string::npos);
  // Every page of both buffers is allocated as planned.
  CHECK(r.out.find("(exactly as plan)") != std::string::npos);
}
