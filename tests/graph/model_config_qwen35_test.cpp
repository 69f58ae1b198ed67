// Qwen3.5's shape in ModelConfig: the presets' published values, layer types, partial RoPE, the
// parameter count summed from the tensors' shapes, validation, and the refusal to build a graph.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "graph/model_builder.h"
#include "graph/model_config.h"

using namespace remat;

TEST_CASE("qwen3.5 presets carry Qwen3.5-0.8B's text_config values, and the 2B's width",
          "[graph][model_config]") {
  const ModelConfig s = ModelConfig::preset("qwen3.5-0.8b");
  CHECK(s.qwen35);
  CHECK(s.arch == Architecture::llama);
  CHECK(s.layers == 24);
  CHECK(s.dim == 1024);
  CHECK(s.mlp_width() == 3584);
  CHECK(s.heads == 8);
  CHECK(s.kv_head_count() == 2);
  CHECK(s.head_dim() == 256);
  CHECK(s.vocab == 248320);
  CHECK(s.ctx == 262144);
  CHECK(s.tied_head);
  CHECK(s.qk_norm);
  CHECK(s.rotary_dims() == 64);  // 256 * 0.25
  CHECK(s.qwen35_layers.linear_key_heads == 16);
  CHECK(s.qwen35_layers.linear_value_heads == 16);
  CHECK(s.qwen35_layers.mtp_layers == 1);
  const ModelConfig b = ModelConfig::preset("qwen3.5-2b");
  CHECK(b.dim == 2048);
  CHECK(b.mlp_width() == 6144);
  CHECK(b.name() == "qwen3.5-2b");
}

TEST_CASE("qwen3.5 layers: every fourth is full attention, the rest Gated DeltaNet",
          "[graph][model_config]") {
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  std::vector<int> full;
  for (int i = 0; i < m.layers; ++i)
    if (!m.linear_attention_layer(i)) full.push_back(i);
  CHECK(full == std::vector<int>{3, 7, 11, 15, 19, 23});
  // Other families have no linear layers.
  const ModelConfig q3 = ModelConfig::preset("qwen3-0.6b");
  for (int i = 0; i < q3.layers; ++i) CHECK_FALSE(q3.linear_attention_layer(i));
  CHECK(q3.rotary_dims() == q3.head_dim());
}

TEST_CASE("qwen3.5 parameter count is the sum of its tensors' shapes", "[graph][model_config]") {
  // Qwen3.5-0.8B without the MTP layer, per tensor (transformers' module shapes):
  //   embed_tokens 248320 x 1024 (tied head), final norm 1024;
  //   every layer: two norms 2 x 1024, MLP 3 x 1024 x 3584;
  //   6 full layers: q_proj 1024 x 4096 (q and gate), k_proj and v_proj 1024 x 512 each,
  //     o_proj 2048 x 1024, q_norm and k_norm 256 each;
  //   18 linear layers: in_proj_qkv 1024 x 6144, in_proj_z 1024 x 2048, in_proj_a and in_proj_b
  //     1024 x 16 each, conv1d 6144 x 4, dt_bias and A_log 16 each, norm 128,
  //     out_proj 2048 x 1024.
  const uint64_t embed = 248320ull * 1024 + 1024;
  const uint64_t common = 2 * 1024 + 3ull * 1024 * 3584;
  const uint64_t full = 1024ull * 4096 + 2ull * 1024 * 512 + 2048ull * 1024 + 2 * 256;
  const uint64_t linear =
      1024ull * 6144 + 1024ull * 2048 + 2 * 1024 * 16 + 6144 * 4 + 2 * 16 + 128 + 2048ull * 1024;
  const uint64_t want = embed + 24 * common + 6 * full + 18 * linear;
  CHECK(want == 752393024u);
  CHECK(ModelConfig::preset("qwen3.5-0.8b").parameter_count() == want);
  ModelConfig untied = ModelConfig::preset("qwen3.5-0.8b");
  untied.tied_head = false;
  CHECK(untied.parameter_count() == want + 248320ull * 1024);
}

TEST_CASE("qwen3.5 validation names what Qwen3.5 needs", "[graph][model_config]") {
  const ModelConfig good = ModelConfig::preset("qwen3.5-0.8b");
  auto refused = [&](auto change, const char* message) {
    ModelConfig m = good;
    change(m);
    CHECK_THROWS_WITH(m.validate(), Catch::Contains(message));
  };
  refused([](ModelConfig& m) { m.qwen35_layers.linear_value_heads = 24; },
          "must divide linear_num_value_heads");
  refused([](ModelConfig& m) { m.qwen35_layers.conv_kernel = 0; }, "linear_conv_kernel_dim");
  refused([](ModelConfig& m) { m.qwen35_layers.partial_rotary = 1.5f; }, "partial_rotary_factor");
  refused(
      [](ModelConfig& m) {
        m.qwen35_layers.mrope_section = {16, 16, 16};
      },
      "mrope_section sums to 48");
  refused([](ModelConfig& m) { m.qk_norm = false; }, "q/k norms");
  refused([](ModelConfig& m) { m.qwen35 = false; }, "not qwen35");
}

TEST_CASE("qwen3.5 models build a training graph", "[graph][model_config]") {
  TrainShape shape;
  shape.batch = 1;
  shape.seq = 16;
  for (const char* name : {"qwen3.5-0.8b", "qwen3.5-tiny"}) {
    INFO(name);
    const Graph g = build_training_model(ModelConfig::preset(name), shape);
    CHECK_FALSE(g.parameter_grads.empty());
  }
}
