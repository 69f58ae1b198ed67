// Training states and learning-rate schedules through the C API: a session saved, freed, and
// continued from params_from_state + load_state ends bit-identical to one never stopped, under a
// warmup-cosine schedule the session follows by itself; damaged states, wrong runs, bad schedules
// and NULLs fail with a status and one line; a cancelled save keeps the previous state; remat
// 0.2's shorter params struct is still read.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "remat/remat.hpp"
#include "tests/api/api_test_params.h"

using remat::test::pattern_batch;
using remat::test::small_params;
namespace fs = std::filesystem;

namespace {

remat_session_params scheduled_params() {
  remat_session_params p = small_params();
  p.accum = 2;
  p.grad_clip = 0.5;
  p.lr_schedule = REMAT_LR_COSINE;
  p.warmup_steps = 2;
  p.total_steps = 6;
  p.min_lr_ratio = 0.1;
  return p;
}

void steps(remat_session* s, const remat_session_params& p, int from, int to,
           std::vector<float>& losses) {
  const std::size_t n = std::size_t(p.batch) * p.seq * p.accum;
  for (int i = from; i < to; ++i) {
    const auto b = pattern_batch(n, uint32_t(p.vocab), i);
    float loss = 0;
    REQUIRE(remat_session_step(s, b.tokens.data(), b.targets.data(), n, &loss) == REMAT_OK);
    losses.push_back(loss);
  }
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

}  // namespace

TEST_CASE("a session saved and continued through the C API is bit-identical to one never stopped") {
  const fs::path dir = remat::test::scratch_dir("state");
  const std::string state = (dir / "state").string();
  remat_device* d = nullptr;
  REQUIRE(remat_device_open(nullptr, &d) == REMAT_OK);
  const remat_session_params p = scheduled_params();
  std::vector<float> straight, resumed;

  remat_session* s = nullptr;
  REQUIRE(remat_session_create(d, &p, &s) == REMAT_OK);
  steps(s, p, 0, 6, straight);
  REQUIRE(remat_session_save_file(s, (dir / "straight.safetensors").c_str()) == REMAT_OK);
  remat_session_free(s);

  REQUIRE(remat_session_create(d, &p, &s) == REMAT_OK);
  double lr = -1;
  REQUIRE(remat_session_learning_rate(s, &lr) == REMAT_OK);
  CHECK(lr == 0.0);  // warmup starts at 0
  steps(s, p, 0, 3, resumed);
  REQUIRE(remat_session_learning_rate(s, &lr) == REMAT_OK);
  CHECK(lr < p.learning_rate);  // decaying after the peak at step 2
  REQUIRE(remat_session_save_state(s, state.c_str()) == REMAT_OK);
  remat_session_free(s);

  // The state alone describes the session that continues it.
  remat_session_params q;
  REQUIRE(remat_session_params_default(&q) == REMAT_OK);
  REQUIRE(remat_session_params_from_state(&q, state.c_str()) == REMAT_OK);
  CHECK(q.layers == p.layers);
  CHECK(q.accum == 2);
  CHECK(q.lr_schedule == REMAT_LR_COSINE);
  CHECK(q.total_steps == 6);
  CHECK(q.min_lr_ratio == 0.1);
  REQUIRE(remat_session_create(d, &q, &s) == REMAT_OK);
  REQUIRE(remat_session_load_state(s, state.c_str()) == REMAT_OK);
  uint64_t done = 0;
  REQUIRE(remat_session_steps_done(s, &done) == REMAT_OK);
  CHECK(done == 3);
  steps(s, q, 3, 6, resumed);
  CHECK(resumed == straight);
  REQUIRE(remat_session_save_file(s, (dir / "resumed.safetensors").c_str()) == REMAT_OK);
  CHECK(slurp(dir / "resumed.safetensors") == slurp(dir / "straight.safetensors"));
  remat_session_free(s);
  remat_device_free(d);
  fs::remove_all(dir);
}

TEST_CASE("bad states, other runs, bad schedules and NULLs fail with a status and one line") {
  const fs::path dir = remat::test::scratch_dir("state_errors");
  const std::string state = (dir / "state").string();
  remat_device* d = nullptr;
  REQUIRE(remat_device_open(nullptr, &d) == REMAT_OK);
  remat_session_params p = scheduled_params();
  remat_session* s = nullptr;
  REQUIRE(remat_session_create(d, &p, &s) == REMAT_OK);
  REQUIRE(remat_session_save_state(s, state.c_str()) == REMAT_OK);

  CHECK(remat_session_save_state(nullptr, state.c_str()) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(remat_session_save_state(s, nullptr) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(remat_session_load_state(s, nullptr) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(remat_session_learning_rate(s, nullptr) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(remat_session_steps_done(nullptr, nullptr) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(remat_session_load_state(s, (dir / "nowhere").c_str()) == REMAT_ERROR_IO);
  CHECK(std::string(remat_last_error()).find("nowhere: no such folder") != std::string::npos);

  // A folder of the app's own is never replaced by a state.
  fs::create_directories(dir / "mine");
  std::ofstream(dir / "mine" / "notes.txt") << "keep";
  CHECK(remat_session_save_state(s, (dir / "mine").c_str()) == REMAT_ERROR_IO);
  CHECK(std::string(remat_last_error()).find("notes.txt") != std::string::npos);

  // Damaged: a truncated optimizer file is named, and the session is unchanged.
  fs::copy(state, dir / "bad");
  fs::resize_file(dir / "bad" / "optimizer.safetensors", 100);
  CHECK(remat_session_load_state(s, (dir / "bad").c_str()) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("optimizer.safetensors") != std::string::npos);

  // Another run's session: the difference is named.
  remat_session_params other = p;
  other.batch = 3;
  remat_session* o = nullptr;
  REQUIRE(remat_session_create(d, &other, &o) == REMAT_OK);
  CHECK(remat_session_load_state(o, state.c_str()) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("batch 2, this session 3") != std::string::npos);
  remat_session_free(o);

  // Schedules the session cannot follow.
  remat_session_params bad = p;
  bad.lr_schedule = static_cast<remat_lr_schedule>(7);
  CHECK(remat_session_create(d, &bad, &o) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("lr_schedule is 7") != std::string::npos);
  bad = p;
  bad.warmup_steps = 9;
  CHECK(remat_session_create(d, &bad, &o) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("warmup steps (9) exceed the run's 6 steps") !=
        std::string::npos);
  bad = p;
  bad.total_steps = 0;
  CHECK(remat_plan(&bad, nullptr) == REMAT_ERROR_INVALID_ARGUMENT);
  bad.min_lr_ratio = 2;
  remat_plan_report r{};
  r.struct_size = sizeof r;
  CHECK(remat_plan(&bad, &r) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("min_lr_ratio") != std::string::npos);
  remat_session_free(s);
  remat_device_free(d);
  fs::remove_all(dir);
}

TEST_CASE("a cancelled state save keeps the previous state") {
  const fs::path dir = remat::test::scratch_dir("state_cancel");
  const std::string state = (dir / "state").string();
  remat::api::Device device = remat::api::Device::open();
  bool cancel = false;
  remat::api::SessionParams params;
  static_cast<remat_session_params&>(params) = small_params();
  remat::api::Session s(device, params, [&](std::string_view phase, uint64_t done, uint64_t total) {
    return !(cancel && phase == "save" && done * 2 > total);
  });
  s.save_state(state);
  const std::string before = slurp(fs::path(state) / "params.safetensors");
  const auto b = pattern_batch(16, 64, 0);
  s.step(b.tokens, b.targets);
  CHECK(s.steps_done() == 1);
  cancel = true;
  try {
    s.save_state(state);
    FAIL("the save was not cancelled");
  } catch (const remat::api::Error& e) {
    CHECK(e.status() == REMAT_ERROR_CANCELLED);
  }
  CHECK(slurp(fs::path(state) / "params.safetensors") == before);
  s.load_state(state);
  CHECK(s.steps_done() == 0);
  CHECK(s.learning_rate() == small_params().learning_rate);
  fs::remove_all(dir);
}

TEST_CASE("remat 0.2's params struct, without the schedule, is still read") {
  remat_session_params p = small_params();
  p.lr_schedule = static_cast<remat_lr_schedule>(99);  // past the old struct: never read
  p.struct_size = offsetof(remat_session_params, lr_schedule);
  remat_plan_report r{};
  r.struct_size = sizeof r;
  CHECK(remat_plan(&p, &r) == REMAT_OK);
  CHECK(remat_session_params_from_memory(&p, nullptr, 0) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()) == "data is NULL");
  p.struct_size = offsetof(remat_session_params, lr_schedule) + 4;
  CHECK(remat_plan(&p, &r) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("struct_size") != std::string::npos);
}
