// A checkpoint in one file or sharded behind model.safetensors.index.json: the same tensors and
// values either way, and an index that disagrees with its shards refused by name.
#include "formats/weight_files.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "tests/support/temp_folder.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

std::vector<NamedTensor> tensors() {
  std::vector<NamedTensor> t = {{"a.weight", {2, 3}, {}}, {"b.weight", {4}, {}}, {"c", {3}, {}}};
  float v = 0.5f;
  for (NamedTensor& x : t)
    for (int64_t i = 0; i < x.shape[0] * (x.shape.size() > 1 ? x.shape[1] : 1); ++i)
      x.values.push_back(v *= -1.25f);
  return t;
}

// a.weight and c in shard 1, b.weight in shard 2, and the index naming them.
void write_shards(const fs::path& dir, const std::string& index) {
  const auto t = tensors();
  write_safetensors(dir / "model-00001-of-00002.safetensors", {t[0], t[2]});
  write_safetensors(dir / "model-00002-of-00002.safetensors", {t[1]});
  write_file_atomically(dir / kHfWeightsIndex, index);
}

const std::string kIndex = R"({"metadata": {"total_size": 52}, "weight_map": {
  "a.weight": "model-00001-of-00002.safetensors", "c": "model-00001-of-00002.safetensors",
  "b.weight": "model-00002-of-00002.safetensors"}})";

std::vector<float> values(const WeightFiles& w, const std::string& name) {
  const SafetensorsEntry* e = w.header().find(name);
  REQUIRE(e != nullptr);
  std::vector<float> out(e->elements());
  w.read(*e, 0, out);
  return out;
}

}  // namespace

TEST_CASE("a sharded checkpoint reads as the single file does", "[runtime][weight_files]") {
  test::TempFolder d("weight_files");
  write_safetensors(d / "single.safetensors", tensors());
  write_shards(d.path(), kIndex);
  const WeightFiles single = WeightFiles::open(d / "single.safetensors");
  for (const fs::path& p : {d.path(), d / kHfWeightsIndex}) {
    const WeightFiles sharded = WeightFiles::open(p);
    CHECK(sharded.origin() == (d / kHfWeightsIndex).string());
    REQUIRE(sharded.header().tensors.size() == 3);
    for (const NamedTensor& t : tensors()) {
      CHECK(sharded.header().find(t.name)->shape == t.shape);
      CHECK(values(sharded, t.name) == t.values);
      CHECK(values(single, t.name) == t.values);
    }
    // Pieces come from the right file at the right place.
    std::vector<float> piece(2);
    sharded.read(*sharded.header().find("a.weight"), 3, piece);
    const std::vector<float> a = tensors()[0].values;
    CHECK(piece == std::vector<float>(a.begin() + 3, a.begin() + 5));
  }
  // model.safetensors beside an index wins, as in transformers.
  write_safetensors(d / kHfWeightsFile, {tensors()[1]});
  CHECK(WeightFiles::open(d.path()).header().tensors.size() == 1);
}

TEST_CASE("an index that disagrees with its shards is refused by name", "[runtime][weight_files]") {
  test::TempFolder d("weight_files_bad");
  const std::string shard1 = "\"model-00001-of-00002.safetensors\"";
  const std::string shard2 = "\"model-00002-of-00002.safetensors\"";
  struct Case {
    std::string index, message;
  };
  const Case cases[] = {
      {"{}", "has no \"weight_map\" object"},
      {R"({"weight_map": {}})", "weight_map is empty"},
      {"{\"weight_map\": {\"a.weight\": " + shard1 + ", \"b.weight\": " + shard2 + "}}",
       "tensor 'c' is in " + (d / "model-00001-of-00002.safetensors").string() +
           " but weight_map does not list it"},
      {"{\"weight_map\": {\"a.weight\": " + shard2 + ", \"c\": " + shard1 +
           ", \"b.weight\": " + shard2 + "}}",
       "but weight_map maps it to model-00002-of-00002.safetensors"},
      {"{\"weight_map\": {\"a.weight\": " + shard1 + ", \"c\": " + shard1 +
           ", \"b.weight\": " + shard2 + ", \"d\": " + shard2 + "}}",
       "weight_map maps 'd' to model-00002-of-00002.safetensors, which has no such tensor"},
      {R"({"weight_map": {"a.weight": "../elsewhere.safetensors"}})",
       "something other than a file name in its folder"},
      {R"({"weight_map": {"a.weight": "missing.safetensors"}})",
       "missing.safetensors: cannot open"},
      {"{\"weight_map\": [", "not valid JSON"},
  };
  for (const Case& c : cases) {
    INFO(c.index);
    write_shards(d.path(), c.index);
    CHECK_THROWS_WITH(WeightFiles::open(d.path()), Catch::Contains(c.message));
  }
  fs::remove(d / kHfWeightsIndex);
  CHECK_THROWS_WITH(WeightFiles::open(d.path()),
                    Catch::Contains("is a folder without model.safetensors or "
                                    "model.safetensors.index.json"));
}
