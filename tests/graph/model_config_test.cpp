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
  // Llama-3.2-1B: 1,235,814,400 parameters; -3B: 3,212,749,824 (both tied).
  const ModelConfig l1 = ModelConfig::preset("llama3.2-1b");
  CHECK(l1.parameter_count() == 1235814400u);
  CHECK(ModelConfig::preset("llama3.2-3b").parameter_count() == 3212749824u);
  CHECK(l1.rope_scaling == RopeScaling::llama3);
  CHECK(l1.llama3 == Llama3Scaling{32.0f, 1.0f, 4.0f, 8192});
  CHECK(ModelConfig::preset("llama3.2-3b").head_dim() == 128);
}

TEST_CASE("qwen3 presets have explicit head_dim and q/k norms", "[graph][model_config]") {
  // Qwen3-0.6B: 596,049,920 parameters, Qwen3-1.7B: 1,720,574,976 (tied; each layer adds two
  // [128] norm gains; q_proj is 16 x 128 = 2048 wide whatever the hidden size).
  const ModelConfig q = ModelConfig::preset("qwen3-0.6b");
  CHECK(q.parameter_count() == 596049920u);
  CHECK(ModelConfig::preset("qwen3-1.7b").parameter_count() == 1720574976u);
  CHECK(q.head_dim() == 128);
  CHECK(q.heads * q.head_dim() == 2 * q.dim);
  CHECK(q.qk_norm);
  CHECK_FALSE(q.qkv_bias);
}

TEST_CASE("gemma3 presets count their published parameters", "[graph][model_config]") {
  // google/gemma-3-270m: 268,098,176 parameters; gemma-3-1b: 999,885,952 (tied; four [C] norms
  // per layer, q/k norms of 256, 4 query heads of 256 on one KV head).
  const ModelConfig g = ModelConfig::preset("gemma3-270m");
  CHECK(g.parameter_count() == 268098176u);
  CHECK(ModelConfig::preset("gemma3-1b").parameter_count() == 999885952u);
  CHECK(g.gemma3);
  CHECK(g.head_dim() == 256);
  CHECK(g.gemma == Gemma3Layers{512, 6, 10000.0f, 256.0f});
  // Every sixth layer is global: 5 and 11 and 17 of 18.
  int globals = 0;
  for (int i = 0; i < g.layers; ++i) globals += g.global_layer(i);
  CHECK(globals == 3);
  CHECK(g.global_layer(5));
  CHECK_FALSE(g.global_layer(0));
  CHECK(ModelConfig::preset("gemma3-1b").name() == "gemma3-1b");
}

TEST_CASE("gemma3 validation names what Gemma 3 needs", "[graph][model_config]") {
  ModelConfig g = ModelConfig::preset("gemma3-270m");
  g.gemma.pattern = 0;
  CHECK_THROWS_WITH(g.validate(), Catch::Contains("positive sliding_window and layer pattern"));
  g = ModelConfig::preset("gemma3-270m");
  g.tied_head = false;
  CHECK_THROWS_WITH(g.validate(), Catch::Contains("gemma3 models have q/k norms, a tied head"));
  g = ModelConfig::preset("gemma3-270m");
  g.gemma.query_scalar = 0.0f;
  CHECK_THROWS_WITH(g.validate(), Catch::Contains("query_pre_attn_scalar"));
  ModelConfig l = ModelConfig::preset("llama-tiny");
  l.gemma.sliding_window = 4;
  CHECK_THROWS_WITH(l.validate(), Catch::Contains("not gemma3"));
  ModelConfig t = ModelConfig::preset("tiny");
  t.gemma3 = true;
  CHECK_THROWS_AS(t.validate(), std::invalid_argument);
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
  ModelConfig q = ModelConfig::preset("qwen3-0.6b");
  q.head_size = 7;
  CHECK_THROWS_WITH(q.validate(), "head size (7) must be even for RoPE");
  ModelConfig l = ModelConfig::preset("llama3.2-1b");
  l.llama3.high_freq_factor = 1.0f;
  CHECK_THROWS_WITH(l.validate(), Catch::Contains("0 < low_freq_factor < high_freq_factor"));
  l = ModelConfig::preset("llama3.2-1b");
  l.llama3.factor = 0.5f;
  CHECK_THROWS_WITH(l.validate(), Catch::Contains("factor must be at least 1"));
  l.rope_scaling = RopeScaling::none;
  CHECK_THROWS_WITH(l.validate(), Catch::Contains("rope_scaling is none"));
  ModelConfig g2 = ModelConfig::preset("tiny");
  g2.qk_norm = true;
  CHECK_THROWS_AS(g2.validate(), std::invalid_argument);
}
