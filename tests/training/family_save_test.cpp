// Saved files of the model's own family: a Qwen3, a Gemma 3 and a Llama 3.2 session saved as a
// Hugging Face folder or as one .safetensors file read back as the same ModelConfig (config.json,
// or the file's metadata) and load back bit for bit; GPT-2 keeps its own metadata keys.
#include <catch2/catch.hpp>
#include <string>

#include "formats/hf_config.h"
#include "formats/hf_folder.h"
#include "formats/model_metadata.h"
#include "formats/safetensors.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"

using namespace remat;

namespace {

SessionConfig session_of(const ModelConfig& m, uint64_t seed) {
  SessionConfig c;
  c.model = m;
  c.shape.batch = 2;
  c.shape.seq = 11;
  c.policy = Policy::parse("none");
  c.seed = seed;
  c.pipeline_cache_dir = std::nullopt;
  return c;
}

// Qwen3 of odd sizes: q/k norms, head_dim 12 on a width of 48, untied head.
ModelConfig odd_qwen3() {
  ModelConfig m = test::odd_llama(2, false);
  m.qk_norm = true;
  m.head_size = 12;
  m.rope_theta = 1000000.0f;
  m.norm_eps = 1e-6f;
  return m;
}

// Llama 3.2 of odd sizes: llama3 RoPE scaling, tied head.
ModelConfig odd_llama32() {
  ModelConfig m = test::odd_llama(2, true);
  m.rope_theta = 500000.0f;
  m.rope_scaling = RopeScaling::llama3;
  m.llama3 = {32.0f, 1.0f, 4.0f, 16};
  return m;
}

// Gemma 3 of odd sizes: a global layer between two local ones, window 5 (of 11 positions),
// query scalar 20 against a head size of 12.
ModelConfig odd_gemma3() {
  ModelConfig m = test::odd_llama(3, true);
  m.qk_norm = true;
  m.head_size = 12;
  m.rope_theta = 1000000.0f;
  m.norm_eps = 1e-6f;
  m.gemma3 = true;
  m.gemma = {5, 2, 10000.0f, 20.0f};
  return m;
}

// Saves a trained session as a folder and as one file; both describe the model and load back.
void check_round_trip(const ModelConfig& m, const std::string& name) {
  test::TempFolder d(name);
  Session a(test::device(), session_of(m, 1));
  a.step(test::random_indices(22, 3, uint32_t(m.vocab)),
         test::random_indices(22, 4, uint32_t(m.vocab)));
  save_checkpoint(a, d / "folder");
  save_checkpoint(a, d / "one.safetensors");
  CHECK(checkpoint_model(d / "folder", std::nullopt) == m);
  CHECK(checkpoint_model(d / "one.safetensors", std::nullopt) == m);
  const SafetensorsContents file = read_safetensors(d / "one.safetensors");
  CHECK(file.metadata.at("format") == "pt");
  CHECK(model_config_from_hf_json(file.metadata.at(kConfigMetadataKey)) == m);
  CHECK(file.metadata.count("n_head") == 0);  // no GPT-2 keys on a Llama-family file
  for (const char* path : {"folder", "one.safetensors"}) {
    INFO(path);
    Session b(test::device(), session_of(checkpoint_model(d / path, std::nullopt), 2));
    REQUIRE(b.parameters() != a.parameters());
    b.load(d / path);
    CHECK(b.parameters() == a.parameters());
  }
}

}  // namespace

TEST_CASE("a saved Qwen3 folder and file reload to the same model", "[family_save]") {
  check_round_trip(odd_qwen3(), "family_save_qwen3");
}

TEST_CASE("a saved Gemma 3 folder and file reload to the same model", "[family_save]") {
  check_round_trip(odd_gemma3(), "family_save_gemma3");
}

TEST_CASE("a saved Llama 3.2 folder and file reload to the same model", "[family_save]") {
  check_round_trip(odd_llama32(), "family_save_llama32");
}

TEST_CASE("a saved GPT-2 file keeps GPT-2's metadata keys", "[family_save]") {
  test::TempFolder d("family_save_gpt2");
  const ModelConfig m{2, 32, 2, 64, 16};
  Session a(test::device(), session_of(m, 1));
  a.save(d / "w.safetensors");
  const SafetensorsContents file = read_safetensors(d / "w.safetensors");
  CHECK(file.metadata.at("n_head") == "2");
  CHECK(file.metadata.count(kConfigMetadataKey) == 0);
  CHECK(checkpoint_model(d / "w.safetensors", std::nullopt) == m);
}
