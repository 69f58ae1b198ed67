// Model shapes: presets (both families) with their published parameter counts, validation.
#include "graph/model_config.h"

#include <catch2/catch.hpp>
#include <stdexcept>

#include "graph/gpt_builder.h"

using namespace remat;

TEST_CASE("every preset validates and names itself", "[graph][model_config]") {
  for (std::string_view name : ModelConfig::preset_names()) {
    const ModelConfig m = ModelConfig::preset(name);
    CHECK_NOTHROW(m.validate());
    CHECK(m.name() == name);
  }
}

TEST_CASE("llama presets carry their Hugging Face config values", "[graph][model_config]") {
  const ModelConfig s = ModelConfig::preset("smollm2-135m");
  CHECK(s.arch == Architecture::llama);
  CHECK(s.kv_head_count() == 3);
  CHECK(s.head_dim() == 64);
  CHECK(s.mlp_width() == 1536);
  CHECK(s.tied_head);
  // 134,515,008 parameters: the count Hugging Face reports for SmolLM2-135M (tied head).
  CHECK(s.parameter_count() == 134515008u);
  // Qwen2.5-0.5B: 494,032,768 parameters with q/k/v biases and a tied head.
  CHECK(ModelConfig::preset("qwen2.5-0.5b").parameter_count() == 494032768u);
  // Llama-3.2-1B: 1,235,814,400 parameters.
  CHECK(ModelConfig::preset("llama3.2-1b").parameter_count() == 1235814400u);
  CHECK(ModelConfig::preset("llama3.2-1b").training_refusal().find("rope_scaling") !=
        std::string::npos);
  CHECK(s.training_refusal().empty());
}

TEST_CASE("gpt2 parameter count is unchanged", "[graph][model_config]") {
  CHECK(ModelConfig::preset("gpt2").parameter_count() == 124439808u);
}

TEST_CASE("model validation names the bad field", "[graph][model_config]") {
  ModelConfig m = ModelConfig::preset("llama-tiny");
  m.kv_heads = 3;
  CHECK_THROWS_WITH(m.validate(), "kv_heads (3) must divide heads (4)");
  ModelConfig g = ModelConfig::preset("tiny");
  g.kv_heads = 2;
  CHECK_THROWS_AS(g.validate(), std::invalid_argument);
  TrainShape shape;
  shape.dropout = 0.1f;
  CHECK_THROWS_WITH(shape.validate(ModelConfig::preset("llama-tiny")),
                    "the Llama family has no dropout; use --dropout 0");
}
