// The __metadata__ a saved model carries: GPT-2's keys for GPT-2, the config.json text for the
// Llama family, read back to the same ModelConfig; a damaged config is refused by key.
#include "formats/model_metadata.h"

#include <catch2/catch.hpp>
#include <string>

#include "formats/gpt2_weights.h"
#include "formats/hf_config.h"

using namespace remat;

TEST_CASE("model metadata: each preset's description reads back as the same model") {
  for (std::string_view name : ModelConfig::preset_names()) {
    INFO(name);
    const ModelConfig m = ModelConfig::preset(name);
    const auto metadata = model_metadata(m);
    CHECK(metadata.at("format") == "pt");
    if (m.arch == Architecture::gpt2) {
      CHECK(metadata == gpt2_metadata(m));
      CHECK_FALSE(metadata_model(metadata).has_value());
    } else {
      REQUIRE(metadata_model(metadata).has_value());
      CHECK(*metadata_model(metadata) == m);
    }
  }
}

TEST_CASE("model metadata: a config that does not describe a model is refused naming the key") {
  CHECK_FALSE(metadata_model({{"format", "pt"}}).has_value());
  CHECK_THROWS_WITH(metadata_model({{kConfigMetadataKey, "{"}}),
                    Catch::Contains("__metadata__ config"));
  std::string config = hf_config_json(ModelConfig::preset("qwen3-0.6b"));
  const auto at = config.find("\"silu\"");
  REQUIRE(at != std::string::npos);
  config.replace(at, 6, "\"gelu\"");
  CHECK_THROWS_WITH(metadata_model({{kConfigMetadataKey, config}}), Catch::Contains("hidden_act"));
}
