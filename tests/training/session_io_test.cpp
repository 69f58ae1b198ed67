// Loading and saving weights: from a file or from memory, progress for every long phase, and
// cancellation that leaves the session usable, nothing leaked and no partial file.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "formats/safetensors.h"
#include "runtime/session.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

using Params = std::vector<std::pair<std::string, std::vector<float>>>;

SessionConfig config(uint64_t seed) {
  SessionConfig c;
  c.model = ModelConfig{2, 32, 2, 64, 16};
  c.shape.batch = 2;
  c.shape.seq = 8;
  c.policy = Policy::parse("none");
  c.seed = seed;
  c.pipeline_cache_dir = std::nullopt;
  return c;
}

float train_step(Session& s, uint32_t seed) {
  const std::size_t n = 2 * 8;
  return s.step(test::random_indices(n, seed, 64), test::random_indices(n, seed + 1, 64));
}

// Cancels the first event of `phase` whose done is at least `at`.
ProgressFn cancel_at(std::string phase, uint64_t at, int* seen = nullptr) {
  return [phase, at, seen](const ProgressEvent& e) {
    if (seen && e.phase == phase) ++*seen;
    return !(e.phase == phase && e.done >= at);
  };
}

}  // namespace

TEST_CASE("weights load the same from a file and from memory, and survive a save") {
  test::TempFolder d("io_roundtrip");
  Session a(test::device(), config(1));
  train_step(a, 3);
  a.save(d / "a.safetensors");
  const Params trained = a.parameters();

  Session from_file(test::device(), config(2));
  REQUIRE(from_file.parameters() != trained);
  from_file.load(d / "a.safetensors");
  CHECK(from_file.parameters() == trained);

  const std::vector<std::byte> bytes = test::read_bytes(d / "a.safetensors");
  Session from_memory(test::device(), config(2));
  from_memory.load(bytes, "checkpoint in memory");
  CHECK(from_memory.parameters() == trained);
  // Both continue training identically: the optimizer state was reset the same way.
  CHECK(train_step(from_file, 9) == train_step(from_memory, 9));

  // A save of loaded weights is byte-identical to the file they came from.
  Session again(test::device(), config(3));
  again.load(bytes, "again");
  again.save(d / "b.safetensors");
  CHECK(test::read_bytes(d / "b.safetensors") == bytes);
  CHECK_THROWS_WITH(from_memory.load(std::span(bytes).first(100), "truncated image"),
                    Catch::StartsWith("truncated image: "));
}

TEST_CASE("a file with a bad value anywhere leaves the session's weights untouched") {
  test::TempFolder d("io_bad_value");
  Session a(test::device(), config(1));
  a.save(d / "a.safetensors");
  std::vector<std::byte> bytes = test::read_bytes(d / "a.safetensors");
  // The last four bytes are the last float of the last tensor: make it NaN.
  const float nan = std::nanf("");
  std::memcpy(bytes.data() + bytes.size() - 4, &nan, 4);

  Session s(test::device(), config(5));
  train_step(s, 1);
  const Params before = s.parameters();
  CHECK_THROWS_WITH(s.load(bytes, "poisoned"),
                    Catch::StartsWith("poisoned: tensor '") && Catch::Contains("non-finite"));
  CHECK(s.parameters() == before);
  CHECK(s.steps_done() == 1);
}

TEST_CASE("construction, load and save report progress up to their totals") {
  test::TempFolder d("io_progress");
  std::vector<std::string> phases;
  std::map<std::string, std::pair<uint64_t, uint64_t>> last;  // phase -> done, total
  SessionConfig c = config(1);
  c.progress = [&](const ProgressEvent& e) {
    if (phases.empty() || phases.back() != e.phase) phases.emplace_back(e.phase);
    CHECK(e.done <= e.total);
    if (last.count(std::string(e.phase))) CHECK(e.done >= last[std::string(e.phase)].first);
    last[std::string(e.phase)] = {e.done, e.total};
    return true;
  };
  Session s(test::device(), c);
  CHECK(phases == std::vector<std::string>{"init", "compile"});
  s.save(d / "w.safetensors");
  s.load(d / "w.safetensors");
  CHECK(phases == std::vector<std::string>{"init", "compile", "save", "load"});
  uint64_t parameter_bytes = 0;
  for (const auto& [name, v] : s.parameters()) parameter_bytes += 4 * v.size();
  CHECK(last["init"] == std::make_pair(parameter_bytes, parameter_bytes));
  CHECK(last["save"] == std::make_pair(parameter_bytes, parameter_bytes));
  CHECK(last["load"] == std::make_pair(2 * parameter_bytes, 2 * parameter_bytes));
  CHECK(last["compile"].first == last["compile"].second);
  CHECK(last["compile"].second > 5);
  // Distinct pipelines: both layers dispatch the same kernels.
  CHECK(last["compile"].second < s.dispatch_count());
  // A barrier only ever precedes a dispatch that depends on an earlier one of its buffer.
  CHECK(s.barrier_count() > 0);
  CHECK(s.barrier_count() < s.dispatch_count());
}

TEST_CASE("a cancelled construction throws Cancelled and frees every allocation") {
  for (const char* phase : {"init", "compile"}) {
    INFO(phase);
    const uint64_t live = test::device().ledger().stats().total_live_bytes;
    SessionConfig c = config(1);
    int seen = 0;
    c.progress = cancel_at(phase, 1, &seen);
    CHECK_THROWS_AS(Session(test::device(), c), Cancelled);
    CHECK(seen >= 2);
    CHECK(test::device().ledger().stats().total_live_bytes == live);
  }
}

TEST_CASE("a cancelled save leaves no file and keeps the previous one") {
  test::TempFolder d("io_cancel_save");
  SessionConfig c = config(1);
  bool cancel = false;
  c.progress = [&](const ProgressEvent& e) { return !(cancel && e.phase == "save" && e.done > 0); };
  Session s(test::device(), c);
  s.save(d / "w.safetensors");
  const auto before = test::read_bytes(d / "w.safetensors");
  train_step(s, 4);
  cancel = true;
  CHECK_THROWS_AS(s.save(d / "w.safetensors"), Cancelled);
  CHECK(test::read_bytes(d / "w.safetensors") == before);
  CHECK(d.entries() == 1);  // no temporary left behind
  CHECK_THROWS_AS(s.save(d / "new.safetensors"), Cancelled);
  CHECK_FALSE(fs::exists(d / "new.safetensors"));
  CHECK(d.entries() == 1);
}

TEST_CASE("a cancelled load leaves a usable session: untouched, or freshly initialised") {
  test::TempFolder d("io_cancel_load");
  Session source(test::device(), config(1));
  train_step(source, 2);
  source.save(d / "w.safetensors");
  const Params fresh = Session(test::device(), config(7)).parameters();
  uint64_t parameter_bytes = 0;
  for (const auto& [name, v] : fresh) parameter_bytes += 4 * v.size();

  SessionConfig c = config(7);
  uint64_t cancel_from = UINT64_MAX;
  c.progress = [&](const ProgressEvent& e) {
    return !(e.phase == "load" && e.done >= cancel_from);
  };
  Session s(test::device(), c);
  train_step(s, 5);
  const Params trained = s.parameters();

  // While values are being checked, nothing on the device has changed.
  cancel_from = 1;
  CHECK_THROWS_AS(s.load(d / "w.safetensors"), Cancelled);
  CHECK(s.parameters() == trained);
  CHECK(s.steps_done() == 1);

  // Half-way through the upload, the parameters fall back to the seeded initialisation.
  cancel_from = parameter_bytes + 1;
  CHECK_THROWS_AS(s.load(d / "w.safetensors"), Cancelled);
  CHECK(s.parameters() == fresh);
  CHECK(s.steps_done() == 0);
  // ... and it trains exactly like a fresh session.
  Session twin(test::device(), config(7));
  CHECK(train_step(s, 8) == train_step(twin, 8));

  cancel_from = UINT64_MAX;
  s.load(d / "w.safetensors");
  CHECK(s.parameters() == source.parameters());
}
