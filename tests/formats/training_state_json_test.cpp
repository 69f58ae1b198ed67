// state.json's model: Llama 3's RoPE factors, Qwen3's head size and q/k norms and Qwen3.5's
// layers read back as written, and a state written before those fields still reads as the model it
// described.
#include "formats/training_state_json.h"

#include <catch2/catch.hpp>
#include <string>

using namespace remat;

namespace {

TrainingState state_of(const ModelConfig& m) {
  TrainingState s;
  s.step = 3;
  s.model = m;
  s.shape.batch = 1;
  s.shape.seq = 8;
  s.policy = Policy::parse("none");
  return s;
}

TEST_CASE("state.json keeps Llama 3's RoPE factors and Qwen3's head size and q/k norms") {
  for (const char* name : {"llama3.2-1b", "qwen3-0.6b", "qwen3-1.7b", "smollm2-135m", "tiny"}) {
    INFO(name);
    const std::string text = training_state_json(state_of(ModelConfig::preset(name)));
    CHECK(parse_training_state(text, "state.json").model == ModelConfig::preset(name));
  }
  ModelConfig odd = ModelConfig::preset("qwen3-0.6b");
  odd.head_size = 12;
  odd.dim = 50;
  odd.rope_scaling = RopeScaling::llama3;
  odd.llama3 = {8.0f, 1.5f, 4.25f, 100};
  CHECK(parse_training_state(training_state_json(state_of(odd)), "s").model == odd);
}

TEST_CASE("state.json keeps Gemma 3's layer settings") {
  ModelConfig g = ModelConfig::preset("gemma3-270m");
  CHECK(parse_training_state(training_state_json(state_of(g)), "s").model == g);
  g.gemma = {7, 3, 12345.5f, 24.0f, 8.0f};
  const std::string text = training_state_json(state_of(g));
  CHECK(text.find("\"gemma3\"") != std::string::npos);
  CHECK(parse_training_state(text, "s").model == g);
  // Other models write no gemma3 object.
  CHECK(training_state_json(state_of(ModelConfig::preset("qwen3-0.6b"))).find("gemma3") ==
        std::string::npos);
}

// Without its qwen35 object a Qwen3.5 state read back as a Llama model of the same sizes, which
// no resumed run could load its parameters into.
TEST_CASE("state.json keeps Qwen3.5's layer settings") {
  for (const char* name : {"qwen3.5-tiny", "qwen3.5-0.8b", "qwen3.5-2b"}) {
    INFO(name);
    const ModelConfig m = ModelConfig::preset(name);
    CHECK(parse_training_state(training_state_json(state_of(m)), "s").model == m);
  }
  ModelConfig q = ModelConfig::preset("qwen3.5-0.8b");
  q.layers = 6;
  q.qwen35_layers = {3, 2, 6, 16, 8, 3, 0.375f, 2, {24, 16, 8}, false};  // 48 rotated pairs
  const std::string text = training_state_json(state_of(q));
  CHECK(text.find("\"qwen35\"") != std::string::npos);
  const ModelConfig back = parse_training_state(text, "s").model;
  CHECK(back.qwen35);
  CHECK(back.qwen35_layers == q.qwen35_layers);
  CHECK(back == q);
  CHECK(training_state_json(state_of(ModelConfig::preset("qwen3-0.6b"))).find("qwen35") ==
        std::string::npos);
  std::string bad = text;
  const auto at = bad.find("\"mrope_section\"");
  REQUIRE(at != std::string::npos);
  bad.replace(bad.find('[', at), bad.find(']', at) - bad.find('[', at) + 1, "[1, 2]");
  CHECK_THROWS_WITH(parse_training_state(bad, "s"),
                    Catch::Contains("model.qwen35.mrope_section\" must be three whole numbers"));
}

TEST_CASE("state.json keeps the config.json spelling a model was read in") {
  ModelConfig g = ModelConfig::preset("gemma3-270m");
  g.config_keys.keys = HfKeys::transformers5;
  const std::string text = training_state_json(state_of(g));
  CHECK(text.find("\"config_keys\": \"transformers5\"") != std::string::npos);
  CHECK(parse_training_state(text, "s").model.config_keys.keys == HfKeys::transformers5);
  // transformers 4's keys, the default, write nothing: older states read as they did.
  const std::string v4 = training_state_json(state_of(ModelConfig::preset("gemma3-270m")));
  CHECK(v4.find("config_keys") == std::string::npos);
  CHECK(parse_training_state(v4, "s").model.config_keys.keys == HfKeys::transformers4);
  std::string bad = text;
  bad.replace(bad.find("\"transformers5\""), 15, "\"transformers6\"");
  CHECK_THROWS_WITH(parse_training_state(bad, "s"), Catch::Contains("model.config_keys"));
}

TEST_CASE("a state written before head_size and qk_norm reads with their defaults") {
  std::string text = training_state_json(state_of(ModelConfig::preset("smollm2-135m")));
  for (const std::string key : {",\n    \"head_size\": 0", ",\n    \"qk_norm\": false"}) {
    const std::size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    text.erase(at, key.size());
  }
  REQUIRE(text.find("qk_norm") == std::string::npos);
  CHECK(parse_training_state(text, "s").model == ModelConfig::preset("smollm2-135m"));
}

TEST_CASE("a llama3 state without its factors is refused naming the member") {
  std::string text = training_state_json(state_of(ModelConfig::preset("llama3.2-1b")));
  const std::size_t at = text.find("\"factor\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, 8, "\"factors\"");
  CHECK_THROWS_WITH(parse_training_state(text, "s"), Catch::Contains("model.llama3.factor"));
}

}  // namespace
