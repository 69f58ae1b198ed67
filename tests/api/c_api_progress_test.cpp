// Progress and cancellation through the C API's callback, weights loaded from memory, and the
// pipeline cache folder: what an app with a progress bar and a cancel button relies on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
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

namespace {

struct Event {
  std::string phase;
  uint64_t done, total;
};

// Records every event; cancels at the first event of `cancel_phase`.
struct Recorder {
  std::vector<Event> events;
  std::string cancel_phase;
  static int record(void* user, const char* phase, uint64_t done, uint64_t total) {
    auto* r = static_cast<Recorder*>(user);
    r->events.push_back({phase, done, total});
    return r->cancel_phase == phase ? 1 : 0;
  }
  // Each phase's events count up to its total, and the phase ends there.
  void check_phase(const std::string& phase) const {
    uint64_t last = 0, total = 0;
    int seen = 0;
    for (const Event& e : events) {
      if (e.phase != phase) continue;
      CHECK(e.done >= last);
      last = e.done;
      total = e.total;
      ++seen;
    }
    INFO(phase);
    CHECK(seen >= 2);
    CHECK(last == total);
    CHECK(total > 0);
  }
};

remat_session_params params_with(Recorder& r) {
  remat_session_params p = small_params();
  p.progress = &Recorder::record;
  p.progress_user = &r;
  p.pipeline_cache_dir = "";  // no cache: every create compiles
  return p;
}

float one_step(remat_session* s) {
  const auto b = pattern_batch(16, 64, 0);
  float loss = 0;
  REQUIRE(remat_session_step(s, b.tokens.data(), b.targets.data(), 16, &loss) == REMAT_OK);
  return loss;
}

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

struct Fixture {
  remat_device* device = nullptr;
  std::filesystem::path dir = remat::test::scratch_dir("progress");
  Fixture() { REQUIRE(remat_device_open(nullptr, &device) == REMAT_OK); }
  ~Fixture() {
    remat_device_free(device);
    std::filesystem::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("progress reports init, compile, save and load to the end of each phase") {
  Fixture f;
  Recorder r;
  const remat_session_params p = params_with(r);
  remat_session* s = nullptr;
  REQUIRE(remat_session_create(f.device, &p, &s) == REMAT_OK);
  r.check_phase("init");
  r.check_phase("compile");
  const std::string path = (f.dir / "w.safetensors").string();
  REQUIRE(remat_session_save_file(s, path.c_str()) == REMAT_OK);
  r.check_phase("save");
  r.events.clear();
  REQUIRE(remat_session_load_file(s, path.c_str()) == REMAT_OK);
  r.check_phase("load");
  remat_session_free(s);
}

TEST_CASE(
    "cancelling from the callback stops create, load and save, and the session stays usable") {
  Fixture f;
  Recorder r;
  r.cancel_phase = "compile";
  const remat_session_params p = params_with(r);
  remat_session* s = reinterpret_cast<remat_session*>(0x1);
  CHECK(remat_session_create(f.device, &p, &s) == REMAT_ERROR_CANCELLED);
  CHECK(s == nullptr);
  CHECK(std::string(remat_last_error()).find("compile") != std::string::npos);

  r.cancel_phase.clear();
  REQUIRE(remat_session_create(f.device, &p, &s) == REMAT_OK);
  const std::string path = (f.dir / "w.safetensors").string();
  REQUIRE(remat_session_save_file(s, path.c_str()) == REMAT_OK);
  const std::string saved = read_bytes(path);

  r.cancel_phase = "load";
  CHECK(remat_session_load_file(s, path.c_str()) == REMAT_ERROR_CANCELLED);
  CHECK(!std::string(remat_last_error()).empty());
  CHECK(remat_session_load_memory(s, saved.data(), saved.size()) == REMAT_ERROR_CANCELLED);

  r.cancel_phase = "save";
  const std::string other = (f.dir / "never.safetensors").string();
  CHECK(remat_session_save_file(s, other.c_str()) == REMAT_ERROR_CANCELLED);
  CHECK(!std::filesystem::exists(other));
  CHECK(remat_session_save_file(s, path.c_str()) == REMAT_ERROR_CANCELLED);
  CHECK(read_bytes(path) == saved);  // the previous file is kept

  r.cancel_phase.clear();
  CHECK(std::isfinite(one_step(s)));
  remat_session_free(s);
}

TEST_CASE("weights load from memory exactly as from their file, and corrupt bytes are refused") {
  Fixture f;
  const remat_session_params p = small_params();
  remat_session* trained = nullptr;
  REQUIRE(remat_session_create(f.device, &p, &trained) == REMAT_OK);
  one_step(trained);
  const std::string path = (f.dir / "w.safetensors").string();
  REQUIRE(remat_session_save_file(trained, path.c_str()) == REMAT_OK);
  remat_session_free(trained);

  remat_session_params q = small_params();
  q.seed = 99;  // different initial weights: only the load makes the two agree
  remat_session *from_file = nullptr, *from_memory = nullptr;
  REQUIRE(remat_session_create(f.device, &q, &from_file) == REMAT_OK);
  REQUIRE(remat_session_create(f.device, &q, &from_memory) == REMAT_OK);
  REQUIRE(remat_session_load_file(from_file, path.c_str()) == REMAT_OK);
  std::string bytes = read_bytes(path);
  REQUIRE(remat_session_load_memory(from_memory, bytes.data(), bytes.size()) == REMAT_OK);
  bytes.assign(bytes.size(), '\0');  // not retained: the session never reads it again
  const float a = one_step(from_file), b = one_step(from_memory);
  CHECK(std::memcmp(&a, &b, sizeof a) == 0);

  std::string corrupt = read_bytes(path);
  corrupt[10] = '!';  // inside the JSON header
  CHECK(remat_session_load_memory(from_memory, corrupt.data(), corrupt.size()) ==
        REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(remat_last_error()).find("weights in memory") != std::string::npos);
  CHECK(remat_session_load_memory(from_memory, corrupt.data(), 5) == REMAT_ERROR_INVALID_ARGUMENT);
  CHECK(std::isfinite(one_step(from_memory)));
  remat_session_free(from_file);
  remat_session_free(from_memory);
}

TEST_CASE("the pipeline cache goes to the folder the app names") {
  Fixture f;
  const auto cache = f.dir / "pipelines";
  remat_session_params p = small_params();
  const std::string folder = cache.string();
  p.pipeline_cache_dir = folder.c_str();
  remat_session* s = nullptr;
  REQUIRE(remat_session_create(f.device, &p, &s) == REMAT_OK);
  remat_session_free(s);
  REQUIRE(std::filesystem::is_directory(cache));
  CHECK(!std::filesystem::is_empty(cache));
}

TEST_CASE("the C++ wrapper's progress function cancels by returning false or throwing") {
  Fixture f;
  const auto device = remat::api::Device::open();
  const std::string path = (f.dir / "w.safetensors").string();
  std::vector<std::string> phases;
  bool cancel = false, explode = false;
  remat::api::SessionParams params;
  static_cast<remat_session_params&>(params) = small_params();
  remat::api::Session session(device, params, [&](std::string_view phase, uint64_t, uint64_t) {
    phases.emplace_back(phase);
    if (explode) throw std::runtime_error("the app's callback failed");
    return !cancel;
  });
  CHECK(std::find(phases.begin(), phases.end(), "init") != phases.end());
  session.save(path);
  cancel = true;
  try {
    session.load(path);
    FAIL("the load was not cancelled");
  } catch (const remat::api::Error& e) {
    CHECK(e.status() == REMAT_ERROR_CANCELLED);
  }
  cancel = false;
  explode = true;
  CHECK_THROWS_AS(session.save(path), remat::api::Error);
  explode = false;
  session.load(path);
}
