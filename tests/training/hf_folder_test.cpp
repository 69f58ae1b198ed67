// Hugging Face model folders: a session saved as a folder loads back bit for bit, a sharded copy
// of the same weights loads exactly as the single file does, and failures change nothing.
#include "formats/hf_folder.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

SessionConfig config(uint64_t seed, bool* cancel_saves = nullptr) {
  SessionConfig c;
  c.model = ModelConfig{2, 32, 2, 64, 16};
  c.shape.batch = 2;
  c.shape.seq = 8;
  c.policy = Policy::parse("none");
  c.seed = seed;
  c.pipeline_cache_dir = std::nullopt;
  if (cancel_saves)
    c.progress = [cancel_saves](const ProgressEvent& e) {
      return !(*cancel_saves && e.phase == "save" && e.done > 0);
    };
  return c;
}

void train_step(Session& s, uint32_t seed) {
  s.step(test::random_indices(16, seed, 64), test::random_indices(16, seed + 1, 64));
}

// The tensors of `file` split over two shards in `dir`, with the index naming them.
void write_sharded(const fs::path& file, const fs::path& dir) {
  const SafetensorsContents all = read_safetensors(file);
  std::vector<NamedTensor> first, second;
  std::string map;
  for (std::size_t i = 0; i < all.tensors.size(); ++i) {
    const std::string shard =
        i % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
    (i % 2 ? second : first).push_back(all.tensors[i]);
    map += (map.empty() ? "" : ", ") + std::string("\"") + all.tensors[i].name + "\": \"" + shard +
           "\"";
  }
  fs::create_directory(dir);
  write_safetensors(dir / "model-00001-of-00002.safetensors", first, all.metadata);
  write_safetensors(dir / "model-00002-of-00002.safetensors", second, all.metadata);
  write_file_atomically(dir / kHfWeightsIndex, "{\"weight_map\": {" + map + "}}");
}

}  // namespace

TEST_CASE("a session saved as a Hugging Face folder loads back bit for bit", "[hf_folder]") {
  test::TempFolder d("hf_folder_roundtrip");
  Session a(test::device(), config(1));
  train_step(a, 3);
  save_checkpoint(a, d / "out");
  CHECK(fs::exists(d / "out" / kHfConfigFile));
  CHECK(fs::exists(d / "out" / kHfWeightsFile));
  CHECK(fs::directory_iterator(d / "out") != fs::directory_iterator());
  CHECK(checkpoint_model(d / "out", std::nullopt) == a.config().model);

  Session b(test::device(), config(2));
  REQUIRE(b.parameters() != a.parameters());
  b.load(d / "out");
  CHECK(b.parameters() == a.parameters());
  // The same session saved to a .safetensors name writes that file alone.
  save_checkpoint(a, d / "w.safetensors");
  CHECK(test::read_bytes(d / "w.safetensors") == test::read_bytes(d / "out" / kHfWeightsFile));
}

TEST_CASE("sharded weights load exactly as the single file", "[hf_folder]") {
  test::TempFolder d("hf_folder_shards");
  Session a(test::device(), config(1));
  train_step(a, 5);
  a.save(d / "w.safetensors");
  write_sharded(d / "w.safetensors", d / "sharded");

  Session from_file(test::device(), config(3));
  from_file.load(d / "w.safetensors");
  Session from_shards(test::device(), config(3));
  from_shards.load(d / "sharded");
  CHECK(from_shards.parameters() == from_file.parameters());
  CHECK(from_shards.parameters() == a.parameters());
  // The same training step from both: the optimizer state was reset the same way.
  train_step(from_file, 9);
  train_step(from_shards, 9);
  CHECK(from_shards.parameters() == from_file.parameters());
}

TEST_CASE("a bad shard leaves the session as it was", "[hf_folder]") {
  test::TempFolder d("hf_folder_bad_shard");
  Session a(test::device(), config(1));
  a.save(d / "w.safetensors");
  write_sharded(d / "w.safetensors", d / "sharded");
  // Poison the last float of shard 2 (write_safetensors refuses NaN, so patch its bytes).
  {
    auto bytes = test::read_bytes(d / "sharded" / "model-00002-of-00002.safetensors");
    const float nan = NAN;
    std::memcpy(bytes.data() + bytes.size() - sizeof nan, &nan, sizeof nan);
    write_file_atomically(
        d / "sharded" / "model-00002-of-00002.safetensors",
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  Session b(test::device(), config(2));
  train_step(b, 4);
  const auto before = b.parameters();
  CHECK_THROWS_WITH(b.load(d / "sharded"), Catch::Contains("model-00002-of-00002.safetensors") &&
                                               Catch::Contains("non-finite"));
  CHECK(b.parameters() == before);
}

TEST_CASE("a failed folder save leaves the previous folder intact", "[hf_folder]") {
  test::TempFolder d("hf_folder_failed_save");
  bool cancel = false;
  Session a(test::device(), config(1, &cancel));
  save_hf_folder(a, d / "out");
  const auto config_bytes = test::read_bytes(d / "out" / kHfConfigFile);
  const auto weight_bytes = test::read_bytes(d / "out" / kHfWeightsFile);
  train_step(a, 7);
  cancel = true;
  CHECK_THROWS_AS(save_hf_folder(a, d / "out"), Cancelled);
  CHECK(test::read_bytes(d / "out" / kHfConfigFile) == config_bytes);
  CHECK(test::read_bytes(d / "out" / kHfWeightsFile) == weight_bytes);
  CHECK(std::distance(fs::directory_iterator(d / "out"), fs::directory_iterator()) == 2);
  // A file where the folder should be, or a missing parent: refused before anything is written.
  write_file_atomically(d / "a_file", "x");
  cancel = false;
  CHECK_THROWS_WITH(save_hf_folder(a, d / "a_file"), Catch::Contains("is a file"));
  CHECK_THROWS_WITH(save_hf_folder(a, d / "no" / "such"), Catch::Contains("cannot create"));
}
