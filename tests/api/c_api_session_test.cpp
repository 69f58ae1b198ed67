// The C API's happy path: a session trains exactly like the library's own Session, saves, loads,
// samples and reports its plan and memory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "runtime/session.h"
#include "tests/api/api_test_params.h"
#include "tests/support/test_device.h"

using remat::test::Handles;
using remat::test::pattern_batch;
using remat::test::small_params;

namespace {

// Step i's batch; masked: every third target is not trained.
remat::test::Tokens batch(int i, bool masked) {
  auto b = pattern_batch(16, 64, i);
  if (masked)
    for (std::size_t j = 0; j < b.targets.size(); j += 3) b.targets[j] = REMAT_IGNORE_TARGET;
  return b;
}

std::vector<float> c_api_losses(remat_session* s, int steps, bool masked = false) {
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    const auto b = batch(i, masked);
    float loss = -1;
    REQUIRE(remat_session_step(s, b.tokens.data(), b.targets.data(), b.tokens.size(), &loss) ==
            REMAT_OK);
    losses.push_back(loss);
  }
  return losses;
}

}  // namespace

TEST_CASE("version and devices") {
  CHECK(remat_version() == REMAT_VERSION);
  CHECK(std::string(REMAT_VERSION_STRING) == std::to_string(REMAT_VERSION_MAJOR) + "." +
                                                 std::to_string(REMAT_VERSION_MINOR) + "." +
                                                 std::to_string(REMAT_VERSION_PATCH));
  uint32_t count = 0;
  REQUIRE(remat_device_count(&count) == REMAT_OK);
  REQUIRE(count >= 1);
  remat_device_info info{sizeof(remat_device_info)};
  REQUIRE(remat_device_get_info(0, &info) == REMAT_OK);
  CHECK(info.index == 0);
  CHECK(std::strlen(info.name) > 0);
  CHECK(std::string(remat_last_error()).empty());
}

TEST_CASE("session parameter defaults are the ones remat.h documents") {
  remat_session_params p;
  REQUIRE(remat_session_params_default(&p) == REMAT_OK);
  CHECK(p.struct_size == sizeof p);
  CHECK(std::string(p.model) == "tiny");
  CHECK(p.layers == 0);
  CHECK(p.batch == 4);
  CHECK(p.seq == 64);
  CHECK(p.accum == 1);
  CHECK(p.policy == nullptr);
  CHECK(p.arena_bytes == 0);
  CHECK(p.learning_rate == 1e-3);
  CHECK(p.beta1 == 0.9);
  CHECK(p.beta2 == 0.999);
  CHECK(p.eps == 1e-8);
  CHECK(p.weight_decay == 1e-2);
  CHECK(p.grad_clip == 0);
  CHECK(p.seed == 0);
  CHECK(p.pipeline_cache_dir == nullptr);
  CHECK(p.progress == nullptr);
}

TEST_CASE("a C API session trains bit-identically to the library's Session") {
  // With ignored targets too: the C API passes REMAT_IGNORE_TARGET through as kIgnoreTarget.
  const bool masked = GENERATE(false, true);
  INFO((masked ? "every third target ignored" : "every target trained"));
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  const remat_session_params p = small_params();
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  const std::vector<float> losses = c_api_losses(h.session, 3, masked);

  remat::SessionConfig c;
  c.model = remat::ModelConfig{2, 32, 2, 64, 16};
  c.shape.batch = 2;
  c.shape.seq = 8;
  c.optimizer.lr = 1e-2;
  c.seed = 7;
  remat::Session internal(remat::test::device(), c);
  for (int i = 0; i < 3; ++i) {
    const auto b = batch(i, masked);
    const float want = internal.step(b.tokens, b.targets);
    CHECK(std::memcmp(&losses[i], &want, sizeof want) == 0);
  }
  for (float l : losses) CHECK(std::isfinite(l));
  CHECK(losses[2] < losses[0]);
}

TEST_CASE("a C API session saves, loads its file back and samples") {
  const auto dir = remat::test::scratch_dir("save");
  const std::string path = (dir / "w.safetensors").string();
  Handles h;
  REQUIRE(remat_device_open("0", &h.device) == REMAT_OK);
  const remat_session_params p = small_params();
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);
  const std::vector<float> trained = c_api_losses(h.session, 3);
  REQUIRE(remat_session_save_file(h.session, path.c_str()) == REMAT_OK);

  // The file's shape makes the same model; its weights continue where training stopped.
  remat_session_params q;
  REQUIRE(remat_session_params_default(&q) == REMAT_OK);
  REQUIRE(remat_session_params_from_file(&q, path.c_str()) == REMAT_OK);
  CHECK(q.model == nullptr);
  CHECK(q.layers == 2);
  CHECK(q.dim == 32);
  CHECK(q.heads == 2);
  CHECK(q.vocab == 64);
  CHECK(q.ctx == 16);
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  remat_session_params m;
  REQUIRE(remat_session_params_default(&m) == REMAT_OK);
  REQUIRE(remat_session_params_from_memory(&m, bytes.data(), bytes.size()) == REMAT_OK);
  CHECK(m.dim == 32);

  q.batch = 2;
  q.seq = 8;
  q.learning_rate = 1e-2;
  remat_session* reloaded = nullptr;
  REQUIRE(remat_session_create(h.device, &q, &reloaded) == REMAT_OK);
  REQUIRE(remat_session_load_file(reloaded, path.c_str()) == REMAT_OK);
  const std::vector<float> after = c_api_losses(reloaded, 1);
  CHECK(after[0] < trained[0]);

  const uint32_t prompt[] = {1, 2, 3};
  uint32_t out[5] = {};
  REQUIRE(remat_session_sample(reloaded, prompt, 3, 5, 11, 0.0f, out, 5) == REMAT_OK);
  for (uint32_t t : out) CHECK(t < 64);
  remat_session_free(reloaded);
  std::filesystem::remove_all(dir);
}

TEST_CASE("plan and memory reports match the plan the session runs") {
  Handles h;
  REQUIRE(remat_device_open(nullptr, &h.device) == REMAT_OK);
  remat_session_params p = small_params();
  p.policy = "every:1";
  REQUIRE(remat_session_create(h.device, &p, &h.session) == REMAT_OK);

  remat_plan_report plan{sizeof(remat_plan_report)};
  REQUIRE(remat_session_plan_report(h.session, &plan) == REMAT_OK);
  CHECK(std::string(plan.policy) == "every:1");
  CHECK(plan.arena_bytes > 0);
  CHECK(plan.arena_bytes >= plan.arena_lower_bound_bytes);
  CHECK(plan.total_bytes == plan.arena_bytes + plan.persistent_bytes);
  CHECK(plan.checkpoint_count == 2);
  CHECK(plan.recompute_ratio > 0);
  CHECK(plan.predicted_step_ratio > 1);

  remat_memory_report mem{sizeof(remat_memory_report)};
  REQUIRE(remat_session_memory_report(h.session, &mem) == REMAT_OK);
  CHECK(mem.arena_bytes == plan.arena_bytes);
  CHECK(mem.persistent_bytes == plan.persistent_bytes);
  CHECK(mem.planned_total_bytes == mem.arena_bytes + mem.persistent_bytes + mem.extra_bytes);
  CHECK(mem.device_allocated_bytes >= mem.planned_total_bytes);
  CHECK(mem.device_peak_bytes >= mem.device_allocated_bytes);

  // Without a device the same request plans the same checkpoints; a cap between the smallest
  // plan and storing everything makes auto recompute.
  remat_plan_report offline{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &offline) == REMAT_OK);
  CHECK(offline.checkpoint_count == plan.checkpoint_count);
  p.policy = "none";
  remat_plan_report full{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &full) == REMAT_OK);
  CHECK(full.recompute_ratio == 0);
  p.policy = nullptr;
  p.arena_bytes = offline.arena_bytes;
  remat_plan_report capped{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&p, &capped) == REMAT_OK);
  CHECK(std::string(capped.policy) == "auto");
  CHECK(capped.arena_bytes <= p.arena_bytes);
  CHECK(capped.arena_bytes < full.arena_bytes);
}
