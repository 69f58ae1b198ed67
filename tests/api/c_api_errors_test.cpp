// Every C API call given bad arguments returns an error status with a one-line message and
// leaves the process running: null handles and out-pointers, wrong struct sizes, corrupt
// weights, a budget below the minimum, wrong token counts, tokens outside the vocabulary.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/api/api_test_params.h"
#include "tests/api/check_error.h"

using remat::test::small_params;

using remat::test::check_error;

namespace {

struct Open {
  remat_device* device = nullptr;
  remat_session* session = nullptr;
  Open() {
    REQUIRE(remat_device_open(nullptr, &device) == REMAT_OK);
    const remat_session_params p = small_params();
    REQUIRE(remat_session_create(device, &p, &session) == REMAT_OK);
  }
  ~Open() {
    remat_session_free(session);
    remat_device_free(device);
  }
};

}  // namespace

TEST_CASE("status names and the last error") {
  CHECK(std::string(remat_status_name(REMAT_ERROR_CANCELLED)) == "REMAT_ERROR_CANCELLED");
  CHECK(std::string(remat_status_name(static_cast<remat_status>(99))) == "unknown status");
  // A failure leaves its message; the next successful call clears it.
  check_error(remat_device_count(nullptr), REMAT_ERROR_INVALID_ARGUMENT, "count");
  uint32_t n = 0;
  REQUIRE(remat_device_count(&n) == REMAT_OK);
  CHECK(std::string(remat_last_error()).empty());
}

TEST_CASE("device calls refuse null pointers, bad sizes and unknown devices") {
  remat_device_info info{sizeof(remat_device_info)};
  check_error(remat_device_get_info(0, nullptr), REMAT_ERROR_INVALID_ARGUMENT, "info");
  check_error(remat_device_get_info(100000, &info), REMAT_ERROR_INVALID_ARGUMENT, "out of range");
  info.struct_size = sizeof(remat_device_info) - 8;
  check_error(remat_device_get_info(0, &info), REMAT_ERROR_INVALID_ARGUMENT, "struct_size");

  remat_device* d = reinterpret_cast<remat_device*>(0x1);
  check_error(remat_device_open(nullptr, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_device_open("no such device anywhere", &d), REMAT_ERROR_DEVICE);
  CHECK(d == nullptr);  // outputs are reset on failure

  remat_vulkan_handles handles{};
  check_error(remat_device_wrap(nullptr, &d), REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_device_wrap(&handles, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_device_wrap(&handles, &d), REMAT_ERROR_INVALID_ARGUMENT, "struct_size");
  handles.struct_size = sizeof handles;
  check_error(remat_device_wrap(&handles, &d), REMAT_ERROR_INVALID_ARGUMENT);
  remat_device_free(nullptr);
}

TEST_CASE("session parameters are checked field by field") {
  check_error(remat_session_params_default(nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  remat_plan_report report{sizeof(remat_plan_report)};
  check_error(remat_plan(nullptr, &report), REMAT_ERROR_INVALID_ARGUMENT, "params");

  remat_session_params p = small_params();
  check_error(remat_plan(&p, nullptr), REMAT_ERROR_INVALID_ARGUMENT, "report");
  report.struct_size = 3;
  check_error(remat_plan(&p, &report), REMAT_ERROR_INVALID_ARGUMENT, "struct_size");
  report.struct_size = sizeof report;

  p.struct_size = sizeof(p) + 8;  // a newer caller's struct this library cannot read
  check_error(remat_plan(&p, &report), REMAT_ERROR_INVALID_ARGUMENT, "struct_size");

  struct Case {
    const char* what;
    void (*spoil)(remat_session_params&);
    const char* mentions;
  };
  const Case cases[] = {
      {"unknown preset", [](remat_session_params& q) { q.model = "gpt5"; }, "gpt5"},
      {"model NULL, fields missing",
       [](remat_session_params& q) {
         q.model = nullptr;
         q.layers = 0;
       },
       "layers"},
      {"negative dim", [](remat_session_params& q) { q.dim = -4; }, "dim"},
      {"heads not dividing dim", [](remat_session_params& q) { q.heads = 5; }, "heads"},
      {"seq beyond ctx", [](remat_session_params& q) { q.seq = 17; }, "ctx"},
      {"zero batch", [](remat_session_params& q) { q.batch = 0; }, "batch"},
      {"zero accum", [](remat_session_params& q) { q.accum = 0; }, "accum"},
      {"unknown policy", [](remat_session_params& q) { q.policy = "most"; }, "most"},
      {"auto without a cap", [](remat_session_params& q) { q.policy = "auto"; }, "arena"},
      {"budget below the minimum", [](remat_session_params& q) { q.arena_bytes = 1000; },
       "minimum"},
      {"memory below the minimum", [](remat_session_params& q) { q.memory_bytes = 1000; },
       "smallest plan's total"},
      {"negative lr", [](remat_session_params& q) { q.learning_rate = -1; }, "learning_rate"},
      {"beta1 of 1", [](remat_session_params& q) { q.beta1 = 1; }, "beta1"},
      {"eps of 0", [](remat_session_params& q) { q.eps = 0; }, "eps"},
      {"NaN clip", [](remat_session_params& q) { q.grad_clip = std::nan(""); }, "grad_clip"},
  };
  remat_device* device = nullptr;
  REQUIRE(remat_device_open(nullptr, &device) == REMAT_OK);
  for (const Case& c : cases) {
    SECTION(c.what) {
      remat_session_params q = small_params();
      c.spoil(q);
      check_error(remat_plan(&q, &report), REMAT_ERROR_INVALID_ARGUMENT, c.mentions);
      remat_session* s = reinterpret_cast<remat_session*>(0x1);
      check_error(remat_session_create(device, &q, &s), REMAT_ERROR_INVALID_ARGUMENT, c.mentions);
      CHECK(s == nullptr);
    }
  }
  remat_device_free(device);
}

TEST_CASE("a Qwen3.5 preset is planned, and a session of the tiny one trains") {
  remat_session_params q = small_params();
  q.model = "qwen3.5-0.8b";
  remat_plan_report report{sizeof(remat_plan_report)};
  REQUIRE(remat_plan(&q, &report) == REMAT_OK);
  CHECK(report.arena_bytes > 0);
  q.model = "qwen3.5-tiny";
  q.layers = q.dim = q.heads = q.vocab = q.ctx = 0;  // the preset's sizes
  remat_device* device = nullptr;
  REQUIRE(remat_device_open(nullptr, &device) == REMAT_OK);
  remat_session* s = nullptr;
  const remat_status created = remat_session_create(device, &q, &s);
  INFO(remat_last_error());
  REQUIRE(created == REMAT_OK);
  std::vector<uint32_t> tokens(size_t(q.batch) * q.seq), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = uint32_t(i * 7 % 256), targets[i] = uint32_t(i * 7 % 256 + 1);
  float loss = -1;
  REQUIRE(remat_session_step(s, tokens.data(), targets.data(), tokens.size(), &loss) == REMAT_OK);
  CHECK(std::isfinite(loss));
  CHECK(loss > 0);
  remat_session_free(s);
  remat_device_free(device);
}

TEST_CASE("session creation refuses null handles and outputs") {
  const remat_session_params p = small_params();
  remat_session* s = nullptr;
  check_error(remat_session_create(nullptr, &p, &s), REMAT_ERROR_INVALID_ARGUMENT, "device");
  remat_device* device = nullptr;
  REQUIRE(remat_device_open(nullptr, &device) == REMAT_OK);
  check_error(remat_session_create(device, &p, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_session_create(device, nullptr, &s), REMAT_ERROR_INVALID_ARGUMENT, "params");
  remat_device_free(device);
  remat_session_free(nullptr);
}

TEST_CASE("session calls refuse null sessions and pointers") {
  Open o;
  const uint32_t tokens[16] = {};
  float loss = 0;
  uint32_t out[4];
  remat_plan_report plan{sizeof(remat_plan_report)};
  remat_memory_report memory{sizeof(remat_memory_report)};
  const auto bad = REMAT_ERROR_INVALID_ARGUMENT;
  check_error(remat_session_load_file(nullptr, "x"), bad, "session");
  check_error(remat_session_load_file(o.session, nullptr), bad, "path");
  check_error(remat_session_load_memory(nullptr, tokens, 4), bad, "session");
  check_error(remat_session_load_memory(o.session, nullptr, 4), bad, "data");
  check_error(remat_session_save_file(nullptr, "x"), bad, "session");
  check_error(remat_session_save_file(o.session, nullptr), bad, "path");
  check_error(remat_session_step(nullptr, tokens, tokens, 16, &loss), bad, "session");
  check_error(remat_session_step(o.session, nullptr, tokens, 16, &loss), bad, "tokens");
  check_error(remat_session_step(o.session, tokens, nullptr, 16, &loss), bad, "targets");
  check_error(remat_session_step(o.session, tokens, tokens, 16, nullptr), bad, "loss");
  check_error(remat_session_set_learning_rate(nullptr, 1e-3), bad, "session");
  check_error(remat_session_set_learning_rate(o.session, -1), bad, "learning rate");
  check_error(remat_session_sample(nullptr, tokens, 1, 4, 0, 1, out, 4), bad, "session");
  check_error(remat_session_sample(o.session, nullptr, 1, 4, 0, 1, out, 4), bad, "prompt");
  check_error(remat_session_sample(o.session, tokens, 0, 4, 0, 1, out, 4), bad, "prompt");
  check_error(remat_session_sample(o.session, tokens, 1, 4, 0, 1, nullptr, 4), bad, "out");
  check_error(remat_session_sample(o.session, tokens, 1, 4, 0, 1, out, 3), bad, "out");
  check_error(remat_session_sample(o.session, tokens, 1, 4, 0, -1, out, 4), bad, "temperature");
  check_error(remat_session_plan_report(nullptr, &plan), bad, "session");
  check_error(remat_session_plan_report(o.session, nullptr), bad, "report");
  plan.struct_size = 0;
  check_error(remat_session_plan_report(o.session, &plan), bad, "struct_size");
  check_error(remat_session_memory_report(nullptr, &memory), bad, "session");
  check_error(remat_session_memory_report(o.session, nullptr), bad, "report");
  memory.struct_size = sizeof memory + 1;
  check_error(remat_session_memory_report(o.session, &memory), bad, "struct_size");
}

TEST_CASE("steps refuse wrong token counts, tokens outside the vocabulary and no trained target") {
  Open o;
  std::vector<uint32_t> tokens(16, 1), targets(16, 2);
  float loss = 0;
  check_error(remat_session_step(o.session, tokens.data(), targets.data(), 15, &loss),
              REMAT_ERROR_INVALID_ARGUMENT, "16");
  check_error(remat_session_step(o.session, tokens.data(), targets.data(), 0, &loss),
              REMAT_ERROR_INVALID_ARGUMENT);
  targets[5] = 64;
  check_error(remat_session_step(o.session, tokens.data(), targets.data(), 16, &loss),
              REMAT_ERROR_INVALID_ARGUMENT, "vocabulary");
  // The ignored target is a target, never a token, and a step must train at least one.
  targets[5] = 2;
  tokens[3] = REMAT_IGNORE_TARGET;
  check_error(remat_session_step(o.session, tokens.data(), targets.data(), 16, &loss),
              REMAT_ERROR_INVALID_ARGUMENT, "vocabulary");
  tokens[3] = 1;
  std::vector<uint32_t> ignored(16, REMAT_IGNORE_TARGET);
  check_error(remat_session_step(o.session, tokens.data(), ignored.data(), 16, &loss),
              REMAT_ERROR_INVALID_ARGUMENT, "at least one trained target");
  const uint32_t prompt[] = {1000};
  uint32_t out[2];
  check_error(remat_session_sample(o.session, prompt, 1, 2, 0, 1, out, 2),
              REMAT_ERROR_INVALID_ARGUMENT, "vocabulary");
  // The session still works after every refusal.
  targets[5] = 2;
  REQUIRE(remat_session_step(o.session, tokens.data(), targets.data(), 16, &loss) == REMAT_OK);
  CHECK(loss > 0);
}

TEST_CASE("weights: missing files are IO errors, corrupt or mismatched ones invalid") {
  Open o;
  const auto dir = remat::test::scratch_dir("errors");
  const std::string missing = (dir / "missing.safetensors").string();
  check_error(remat_session_load_file(o.session, missing.c_str()), REMAT_ERROR_IO, "missing");
  remat_session_params p = small_params();
  check_error(remat_session_params_from_file(&p, missing.c_str()), REMAT_ERROR_IO, "missing");

  const std::string corrupt = (dir / "corrupt.safetensors").string();
  const std::string junk = "\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}";
  std::ofstream(corrupt, std::ios::binary) << junk;
  check_error(remat_session_load_file(o.session, corrupt.c_str()), REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_session_params_from_file(&p, corrupt.c_str()), REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_session_params_from_memory(&p, junk.data(), junk.size()),
              REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_session_params_from_memory(&p, junk.data(), 3), REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_session_params_from_memory(&p, nullptr, 3), REMAT_ERROR_INVALID_ARGUMENT);
  check_error(remat_session_params_from_file(nullptr, corrupt.c_str()),
              REMAT_ERROR_INVALID_ARGUMENT);

  // A model of another shape: the file is well-formed but does not fit this session.
  const std::string other = (dir / "other.safetensors").string();
  {
    remat_device* d = nullptr;
    REQUIRE(remat_device_open(nullptr, &d) == REMAT_OK);
    remat_session_params q = small_params();
    q.dim = 16;
    remat_session* s = nullptr;
    REQUIRE(remat_session_create(d, &q, &s) == REMAT_OK);
    REQUIRE(remat_session_save_file(s, other.c_str()) == REMAT_OK);
    remat_session_free(s);
    remat_device_free(d);
  }
  check_error(remat_session_load_file(o.session, other.c_str()), REMAT_ERROR_INVALID_ARGUMENT);

  const std::string unwritable = (dir / "no" / "such" / "dir" / "w.safetensors").string();
  check_error(remat_session_save_file(o.session, unwritable.c_str()), REMAT_ERROR_IO);
  std::filesystem::remove_all(dir);
}
