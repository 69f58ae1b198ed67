// A Hugging Face folder trains the same whichever transformers wrote its config.json: for each
// family remat reads (GPT-2, Llama with Llama 3's scaling, Qwen2, Qwen3, Gemma 3 with linear
// global scaling and its own local base), a folder in transformers 5's spelling and its
// transformers 4 twin (the same model.safetensors) give bit-identical losses and weights, and
// each trained session saves its config.json (and a .safetensors file's config metadata) in the
// spelling it was read in.
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/json_file.h"
#include "formats/hf_config.h"
#include "formats/hf_config_keys.h"
#include "formats/hf_folder.h"
#include "formats/model_metadata.h"
#include "formats/safetensors.h"
#include "formats/weight_files.h"
#include "runtime/session.h"
#include "runtime/session_files.h"
#include "tests/support/random_fill.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/training/policy_run.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

constexpr int kSteps = 3;

SessionConfig session_of(const ModelConfig& m, uint64_t seed) {
  SessionConfig c;
  c.model = m;
  c.shape.batch = 2;
  c.shape.seq = 11;
  c.optimizer.lr = 1e-2;
  c.policy = Policy::parse("none");
  c.seed = seed;
  return c;
}

JsonValue json_string(const std::string& s) {
  JsonValue v;
  v.type = JsonValue::Type::string;
  v.string = s;
  return v;
}

// Removes `key` from `object`, returning its value (null when absent).
JsonValue take(JsonValue& object, const std::string& key) {
  JsonValue v;
  if (auto it = object.object.find(key); it != object.object.end()) {
    v = it->second;
    object.object.erase(it);
  }
  return v;
}

// One RoPE object as transformers 5 builds it from transformers 4's keys
// (RotaryEmbeddingConfigMixin.convert_rope_params_to_dict, standardize_rope_params):
// rope_scaling's contents, rope_type defaulting to "default", rope_theta moved in.
JsonValue rope_object(const JsonValue& scaling, const JsonValue& theta) {
  JsonValue o;
  if (scaling.type == JsonValue::Type::object) o = scaling;
  o.type = JsonValue::Type::object;
  o.object.emplace("rope_type", json_string("default"));
  if (theta.type != JsonValue::Type::null) o.object.emplace("rope_theta", theta);
  return o;
}

// config.json as transformers 5 saves what transformers 4 wrote: torch_dtype renamed dtype; the
// RoPE keys folded into rope_parameters, Gemma 3's as one object per layer type
// (Gemma3TextConfig.convert_rope_params_to_dict: rope_scaling and rope_theta to
// full_attention, rope_local_base_freq to sliding_attention; sliding_window_pattern left to
// layer_types).
JsonValue as_transformers5(JsonValue c) {
  c.object["dtype"] = take(c, "torch_dtype");
  const std::string type = c.object.at("model_type").string;
  if (type == "gpt2") return c;
  const JsonValue global = rope_object(take(c, "rope_scaling"), take(c, "rope_theta"));
  if (type != "gemma3_text") {
    c.object["rope_parameters"] = global;
    return c;
  }
  JsonValue params;
  params.type = JsonValue::Type::object;
  params.object["full_attention"] = global;
  params.object["sliding_attention"] = rope_object(JsonValue{}, take(c, "rope_local_base_freq"));
  take(c, "sliding_window_pattern");
  c.object["rope_parameters"] = params;
  return c;
}

struct Trained {
  std::vector<uint32_t> loss_bits;
  std::vector<std::pair<std::string, std::vector<float>>> parameters;
};

// The folder's model, loaded and trained kSteps on the same batches every time; saved to
// `out` as a folder and as out.safetensors.
Trained train_folder(const fs::path& folder, const fs::path& out) {
  const ModelConfig m = checkpoint_model(folder, std::nullopt);
  Session s(test::device(), session_of(m, 7));
  s.load(folder);
  Trained t;
  const std::size_t n = 2 * 11;
  for (int i = 0; i < kSteps; ++i)
    t.loss_bits.push_back(
        std::bit_cast<uint32_t>(s.step(test::random_indices(n, 100 + i, uint32_t(m.vocab)),
                                       test::random_indices(n, 200 + i, uint32_t(m.vocab)))));
  t.parameters = s.parameters();
  save_checkpoint(s, out);
  save_checkpoint(s, out.string() + ".safetensors");
  return t;
}

bool has(const JsonValue& doc, const char* key) {
  return doc.find(key) != nullptr;
}

// What a save wrote, in the spelling `v5` says, describing `m`.
void check_saved(const fs::path& out, const ModelConfig& m, bool v5) {
  const JsonValue doc = read_json_file(out / kHfConfigFile);
  INFO(json_text(doc));
  CHECK(has(doc, "dtype") == v5);
  CHECK(has(doc, "torch_dtype") == !v5);
  const bool rope = m.arch == Architecture::llama;
  CHECK(has(doc, "rope_parameters") == (v5 && rope));
  CHECK(has(doc, "rope_theta") == (!v5 && rope));
  CHECK(has(doc, "rope_local_base_freq") == (!v5 && m.gemma3));
  const ModelConfig back = checkpoint_model(out, std::nullopt);
  CHECK(back == m);
  CHECK((back.config_keys.keys == HfKeys::transformers5) == v5);
  // A Llama-family .safetensors file carries config.json in its metadata, spelled the same.
  if (rope) {
    const SafetensorsContents file = read_safetensors(out.string() + ".safetensors");
    const JsonValue meta = parse_json(file.metadata.at(kConfigMetadataKey));
    CHECK(has(meta, "rope_parameters") == v5);
    CHECK(has(meta, "torch_dtype") == !v5);
  }
}

// A trained model saved by remat in transformers 4's spelling, its transformers 5 twin beside
// it, each trained and saved again.
void check_family(const ModelConfig& m, const std::string& tag) {
  test::TempFolder d("config_keys_" + tag);
  Session init(test::device(), session_of(m, 1));
  init.step(test::random_indices(22, 3, uint32_t(m.vocab)),
            test::random_indices(22, 4, uint32_t(m.vocab)));
  save_checkpoint(init, d / "v4");
  fs::create_directory(d / "v5");
  fs::copy_file(d / "v4" / kHfWeightsFile, d / "v5" / kHfWeightsFile);
  const JsonValue v5 = as_transformers5(read_json_file(d / "v4" / kHfConfigFile));
  write_file_atomically(d / "v5" / kHfConfigFile, json_text(v5));
  INFO(json_text(v5));
  REQUIRE(checkpoint_model(d / "v5", std::nullopt).config_keys.keys == HfKeys::transformers5);

  const Trained a = train_folder(d / "v4", d / "out4");
  const Trained b = train_folder(d / "v5", d / "out5");
  CHECK(a.loss_bits == b.loss_bits);
  CHECK(a.parameters == b.parameters);
  check_saved(d / "out4", m, false);
  check_saved(d / "out5", m, true);
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

// Gemma 3 of odd sizes: a global layer between two local ones, window 5 (of 11 positions), the
// global layers' frequencies scaled linearly by 8, and bases far apart (1e6 global, 1e4 local),
// so that reading one for the other changes every loss.
ModelConfig odd_gemma3() {
  ModelConfig m = test::odd_llama(3, true);
  m.qk_norm = true;
  m.head_size = 12;
  m.rope_theta = 1000000.0f;
  m.norm_eps = 1e-6f;
  m.gemma3 = true;
  m.gemma = {5, 2, 10000.0f, 20.0f, 8.0f};
  return m;
}

}  // namespace

TEST_CASE("a transformers 5 GPT-2 folder trains as its transformers 4 twin", "[config_keys]") {
  check_family(ModelConfig{2, 32, 2, 64, 16}, "gpt2");
}

TEST_CASE("a transformers 5 Llama 3.2 folder trains as its transformers 4 twin", "[config_keys]") {
  ModelConfig m = test::odd_llama(2, true);
  m.rope_theta = 500000.0f;
  m.rope_scaling = RopeScaling::llama3;
  m.llama3 = {32.0f, 1.0f, 4.0f, 16};
  check_family(m, "llama32");
}

TEST_CASE("a transformers 5 Qwen2 folder trains as its transformers 4 twin", "[config_keys]") {
  ModelConfig m = test::odd_llama(2, false);
  m.qkv_bias = true;
  m.rope_theta = 1000000.0f;
  check_family(m, "qwen2");
}

TEST_CASE("a transformers 5 Qwen3 folder trains as its transformers 4 twin", "[config_keys]") {
  check_family(odd_qwen3(), "qwen3");
}

TEST_CASE("a transformers 5 Gemma 3 folder trains as its transformers 4 twin", "[config_keys]") {
  check_family(odd_gemma3(), "gemma3");
}
