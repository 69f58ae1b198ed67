// remat_session_params.memory_bytes: a whole-session cap. Too small is
// REMAT_ERROR_INVALID_ARGUMENT with a one-line message naming the smallest total; at that total a
// session is created, trains, and its device allocations are exactly the planned total; a struct
// from before the field is read as no cap.
#include <catch2/catch.hpp>

#include <cstddef>
#include <regex>
#include <string>

#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/api/check_error.h"

using remat::test::check_error;
using remat::test::Handles;
using remat::test::pattern_batch;
using remat::test::small_params;

namespace {

uint64_t named_minimum(const std::string& message) {
  std::smatch m;
  INFO(message);
  REQUIRE(std::regex_search(message, m,
                            std::regex("smallest plan's total of [^(]*\\((\\d+) bytes\\)")));
  return std::stoull(m[1].str());
}

}  // namespace

TEST_CASE("memory_bytes: too small names the minimum, at the minimum the session fits exactly") {
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  remat_session_params p = small_params();
  p.memory_bytes = 4096;
  remat_session* s = reinterpret_cast<remat_session*>(0x1);
  check_error(remat_session_create(h.device, &p, &s), REMAT_ERROR_INVALID_ARGUMENT,
              "memory budget of");
  CHECK(s == nullptr);
  const uint64_t m0 = named_minimum(remat_last_error());
  p.memory_bytes = m0 - 1;
  check_error(remat_session_create(h.device, &p, &s), REMAT_ERROR_INVALID_ARGUMENT,
              "(" + std::to_string(m0) + " bytes)");

  p.memory_bytes = m0;
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  remat_memory_report mem{sizeof(remat_memory_report)};
  REQUIRE(remat_session_memory_report(h.session, &mem) == REMAT_OK);
  CHECK(mem.planned_total_bytes <= m0);
  CHECK(mem.device_allocated_bytes == mem.planned_total_bytes);
  const auto b = pattern_batch(16, 64, 0);
  float loss = -1;
  REQUIRE(remat_session_step(h.session, b.tokens.data(), b.targets.data(), b.tokens.size(),
                             &loss) == REMAT_OK);
  CHECK(loss > 0);

  // remat_plan, without a device, plans at alignment 256: its own minimum, as exact.
  remat_plan_report report{sizeof(remat_plan_report)};
  p.memory_bytes = 4096;
  check_error(remat_plan(&p, &report), REMAT_ERROR_INVALID_ARGUMENT, "memory budget of");
  const uint64_t offline = named_minimum(remat_last_error());
  CHECK(offline >= m0);
  p.memory_bytes = offline;
  CHECK(remat_plan(&p, &report) == REMAT_OK);
  CHECK(report.total_bytes <= offline);
  p.memory_bytes = offline - 1;
  check_error(remat_plan(&p, &report), REMAT_ERROR_INVALID_ARGUMENT,
              "(" + std::to_string(offline) + " bytes)");
}

TEST_CASE("memory_bytes: a struct that ends before it has no cap") {
  remat_session_params p = small_params();
  p.memory_bytes = 1;  // past the struct's end: never read
  p.struct_size = offsetof(remat_session_params, memory_bytes);
  remat_plan_report report{sizeof(remat_plan_report)};
  CHECK(remat_plan(&p, &report) == REMAT_OK);
}
