// formats/base_blocks.h: the one decision, shared by the CLI and the C API, of whether a LoRA
// session keeps a GGUF base's quantized matrices in their blocks.
#include "formats/base_blocks.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "formats/gguf_model.h"
#include "formats/weight_files.h"
#include "tests/support/gguf_model_files.h"
#include "tests/support/temp_folder.h"

using namespace remat;

namespace {

std::vector<std::string> names(const std::vector<BlockWeight>& blocks) {
  std::vector<std::string> out;
  for (const BlockWeight& b : blocks) out.push_back(b.name + " " + b.format.name);
  return out;
}

LoraSpec rank(int r) {
  LoraSpec l;
  l.rank = r;
  return l;
}

}  // namespace

TEST_CASE("base blocks: LoRA on a quantized .gguf keeps its blocks unless asked to decode them") {
  test::TempFolder dir("base_blocks");
  const ModelConfig m = test::block_llama_model(64, 32, false);
  const auto params = test::random_gguf_params(m, 3);
  const auto q8 = dir / "q8.gguf";
  test::write_gguf_model(q8, params, m, GgufArch::llama, GgmlType::q8_0);
  const std::vector<BlockWeight> in_file = WeightFiles::open(q8).gguf()->block_weights();
  REQUIRE(in_file.size() == 2 * 7 + 2);  // seven matrices a layer, the embedding and the head

  CHECK(names(base_block_weights(q8, rank(4), BaseBlocks::automatic)) == names(in_file));
  CHECK(names(base_block_weights(q8, rank(4), BaseBlocks::keep)) == names(in_file));
  CHECK(base_block_weights(q8, rank(4), BaseBlocks::decode).empty());
  // Full fine-tuning trains every weight in f32: nothing to keep, and no choice to make.
  CHECK(base_block_weights(q8, rank(0), BaseBlocks::automatic).empty());
  CHECK_FALSE(base_blocks_apply(q8, rank(0)));
  CHECK_THROWS_AS(base_block_weights(q8, rank(0), BaseBlocks::keep), std::invalid_argument);
  CHECK_THROWS_AS(base_block_weights(q8, rank(0), BaseBlocks::decode), std::invalid_argument);

  // An f32 file holds no blocks; the choice applies but keeps nothing.
  const auto f32 = dir / "f32.gguf";
  test::write_gguf_model(f32, params, m, GgufArch::llama, GgmlType::f32);
  CHECK(base_blocks_apply(f32, rank(4)));
  CHECK(base_block_weights(f32, rank(4), BaseBlocks::automatic).empty());
}

TEST_CASE("base blocks: a base that is no .gguf file, or none, has no blocks to choose about") {
  // Decided by the name alone, as WeightFiles reads a file: nothing is opened.
  const std::filesystem::path st = "/nonexistent/model.safetensors";
  for (const auto& base :
       {std::optional<std::filesystem::path>(st), std::optional<std::filesystem::path>()}) {
    CHECK_FALSE(base_blocks_apply(base, rank(4)));
    CHECK(base_block_weights(base, rank(4), BaseBlocks::automatic).empty());
    CHECK_THROWS_WITH(base_block_weights(base, rank(4), BaseBlocks::keep),
                      Catch::Contains("LoRA on a .gguf model file"));
    CHECK_THROWS_AS(base_block_weights(base, rank(4), BaseBlocks::decode), std::invalid_argument);
  }
  // A .gguf that cannot be read is WeightFiles' error, naming it.
  CHECK_THROWS_WITH(base_block_weights(std::filesystem::path("/nonexistent/m.gguf"), rank(4),
                                       BaseBlocks::automatic),
                    Catch::Contains("/nonexistent/m.gguf"));
}
