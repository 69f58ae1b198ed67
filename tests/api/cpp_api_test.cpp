// The header-only C++ wrapper: RAII handles, spans, and remat::api::Error carrying the C API's
// status and message.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <utility>

#include "remat/remat.hpp"
#include "tests/api/api_test_params.h"

using remat::test::pattern_batch;

namespace {

remat::api::SessionParams small() {
  remat::api::SessionParams p;
  static_cast<remat_session_params&>(p) = remat::test::small_params();
  return p;
}

}  // namespace

TEST_CASE("the C++ wrapper trains, reports and moves") {
  CHECK(!remat::api::devices().empty());
  auto device = remat::api::Device::open();
  remat::api::Session session(device, small());
  const auto b0 = pattern_batch(16, 64, 0);
  const float first = session.step(b0.tokens, b0.targets);
  const float second = session.step(b0.tokens, b0.targets);
  CHECK(std::isfinite(first));
  CHECK(second < first);
  CHECK(session.plan_report().arena_bytes == session.memory_report().arena_bytes);

  remat::api::Session moved = std::move(session);
  CHECK(moved.sample(b0.tokens, 3, 1, 0.5f).size() == 3);
  CHECK(remat::api::plan(small()).arena_bytes > 0);
}

TEST_CASE("the C++ wrapper throws remat::api::Error with status and message") {
  auto device = remat::api::Device::open();
  remat::api::SessionParams bad = small();
  bad.arena_bytes = 1000;
  try {
    remat::api::Session session(device, bad);
    FAIL("a budget of 1000 bytes was accepted");
  } catch (const remat::api::Error& e) {
    CHECK(e.status() == REMAT_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("minimum") != std::string::npos);
  }

  remat::api::Session session(device, small());
  const auto b = pattern_batch(16, 64, 0);
  CHECK_THROWS_AS(session.step(std::span(b.tokens).first(15), std::span(b.targets).first(15)),
                  remat::api::Error);
  CHECK_THROWS_WITH(session.step(b.tokens, std::span(b.targets).first(3)),
                    Catch::Contains("differ in length"));
  CHECK_THROWS_WITH(session.load(std::string("/nonexistent/w.safetensors")),
                    Catch::Contains("cannot open"));
  CHECK_THROWS_AS(remat::api::Device::open("no such device anywhere"), remat::api::Error);
  CHECK_THROWS_AS(remat::api::SessionParams::from_file("/nonexistent.safetensors"),
                  remat::api::Error);
}
