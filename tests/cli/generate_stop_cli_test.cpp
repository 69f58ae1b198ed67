// `remat generate` stops at the model's end tokens (formats/stop_tokens.h): a model that always
// predicts one token runs to --tokens until generation_config.json names that token as an
// eos_token_id, and then stops after producing it, without printing it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "graph/model_builder.h"
#include "tests/api/tiny_tokenizer.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_folder.h"

using namespace remat;
using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "'";
}

// A Llama whose every prediction is token `id`: the residual stream is the embedding (all ones;
// attention and MLP weights zero), the head's row `id` ones and the others zero.
void write_one_token_model(const fs::path& dir, uint32_t id) {
  fs::create_directories(dir);
  const std::string config =
      R"({"model_type": "llama", "hidden_size": 32, "intermediate_size": 48,
      "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 261,
      "max_position_embeddings": 32, "tie_word_embeddings": false})";
  std::ofstream(dir / "config.json") << config;
  const ModelConfig m = model_config_from_hf(parse_json(config));
  const Graph g = build_model(m, TrainShape{1, 8});
  std::vector<NamedTensor> tensors;
  for (TensorId t : g.parameters) {
    const Tensor& p = g.tensors.at(std::size_t(t));
    std::vector<float> v(std::size_t(p.elements()), 0.0f);
    if (p.shape.size() == 1 || p.name.find("embed_tokens") != std::string::npos)
      std::fill(v.begin(), v.end(), 1.0f);
    if (p.name == "lm_head.weight")
      std::fill_n(v.begin() + std::ptrdiff_t(id) * m.dim, m.dim, 1.0f);
    tensors.push_back({p.name, p.shape, std::move(v)});
  }
  write_safetensors(dir / "model.safetensors", tensors);
}

}  // namespace

TEST_CASE("remat generate stops at an eos_token_id of generation_config.json") {
  test::TempFolder d("generate_stop");
  write_one_token_model(d / "model", 'a');
  test::write_tiny_tokenizer(d / "tok");
  const std::string gen = "generate --init " + quoted(d / "model") + " --tokenizer " +
                          quoted(d / "tok") + " --prompt 'hello' --tokens 5 --temperature 0";
  const auto all = run_remat(gen);
  INFO(all.err);
  REQUIRE(all.exit_code == 0);
  CHECK(all.out == "helloaaaaa\n");
  CHECK(all.err.find("generated 5 tokens") != std::string::npos);
  std::ofstream(d / "model" / "generation_config.json") << R"({"eos_token_id": [2, 97]})";
  const auto stopped = run_remat(gen);
  INFO(stopped.err);
  REQUIRE(stopped.exit_code == 0);
  CHECK(stopped.out == "hello\n");
  CHECK(stopped.err.find("generated 1 tokens") != std::string::npos);
}
