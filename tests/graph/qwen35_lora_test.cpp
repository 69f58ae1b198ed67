// LoRA on Qwen3.5 graphs: the default targets of each layer kind, the adapters' PEFT shapes and
// their trained-parameter count from the config alone, every base tensor frozen (the conv, the
// norms, A_log, dt_bias, the embedding), the gate projections adapted only when named, and every
// projection adapted at once on generated configs with a backward that fits the schemas.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "graph/autodiff.h"
#include "graph/lora.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"
#include "graph/weight_dtype.h"
#include "tests/graph/random_qwen35.h"

namespace remat {
namespace {

// The module's last component: "model.layers.3.self_attn.q_proj" -> "q_proj".
std::string leaf(const std::string& module) {
  return module.substr(module.rfind('.') + 1);
}

// {in, out} of each projection, from the config alone.
std::map<std::string, std::pair<int64_t, int64_t>> projections(const ModelConfig& m) {
  const Qwen35Layers& l = m.qwen35_layers;
  const int64_t key = int64_t{l.linear_key_heads} * l.linear_key_head_dim;
  const int64_t value = int64_t{l.linear_value_heads} * l.linear_value_head_dim;
  const int64_t d = m.head_dim(), c = m.dim;
  return {{"q_proj", {c, 2 * m.heads * d}},  // each head's queries, then its gate
          {"k_proj", {c, m.kv_head_count() * d}},
          {"v_proj", {c, m.kv_head_count() * d}},
          {"o_proj", {m.heads * d, c}},
          {"in_proj_qkv", {c, 2 * key + value}},
          {"in_proj_z", {c, value}},
          {"in_proj_a", {c, l.linear_value_heads}},
          {"in_proj_b", {c, l.linear_value_heads}},
          {"out_proj", {value, c}},
          {"gate_proj", {c, m.mlp_width()}},
          {"up_proj", {c, m.mlp_width()}},
          {"down_proj", {m.mlp_width(), c}}};
}

// What rank-R adapters on `targets` (leaf names) train in model `m`: R·(in + out) per adapted
// projection, over the layers that have it.
uint64_t adapter_elements(const ModelConfig& m, int rank, const std::set<std::string>& targets) {
  const auto p = projections(m);
  const std::set<std::string> linear = {"in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b",
                                        "out_proj"};
  const std::set<std::string> full = {"q_proj", "k_proj", "v_proj", "o_proj"};
  uint64_t n = 0;
  for (int i = 0; i < m.layers; ++i)
    for (const auto& [name, io] : p) {
      if (!targets.count(name)) continue;
      if (linear.count(name) && !m.linear_attention_layer(i)) continue;
      if (full.count(name) && m.linear_attention_layer(i)) continue;
      n += uint64_t(rank) * uint64_t(io.first + io.second);
    }
  return n;
}

uint64_t elements(const Graph& g, const std::vector<TensorId>& ids) {
  uint64_t n = 0;
  for (TensorId t : ids) n += uint64_t(g.tensor(t).elements());
  return n;
}

std::set<std::string> names(const Graph& g, const std::vector<TensorId>& ids) {
  std::set<std::string> out;
  for (TensorId t : ids) out.insert(g.tensor(t).name);
  return out;
}

const std::set<std::string> kDefaults = {"q_proj",    "k_proj",  "v_proj",    "o_proj",
                                         "gate_proj", "up_proj", "down_proj", "in_proj_qkv",
                                         "in_proj_z", "out_proj"};

}  // namespace

TEST_CASE("qwen35 lora: the defaults are every projection but the two gate projections") {
  const ModelConfig m = ModelConfig::preset("qwen3.5-0.8b");
  const std::vector<std::string> d = default_lora_targets(m);
  CHECK(std::set<std::string>(d.begin(), d.end()) == kDefaults);
  CHECK(d.size() == kDefaults.size());
  // The other Llama-family models keep their seven.
  CHECK(default_lora_targets(ModelConfig::preset("smollm2-135m")).size() == 7);
  LoraSpec own;
  own.targets = {"in_proj_a"};
  CHECK(lora_targets(own, m) == own.targets);
}

TEST_CASE("qwen35 lora: each layer kind gets its adapters, as many values as the config says") {
  const testing::Qwen35Case c = testing::tiny_qwen35();
  const ModelConfig& m = c.model;
  LoraSpec lora;
  lora.rank = 3;
  const Graph g = build_training_model(m, c.shape, lora);
  const Graph full = build_training_model(m, c.shape);
  // Three Gated DeltaNet layers of 3 + 3 adapters, one gated attention layer of 4 + 3.
  REQUIRE(g.adapters.size() == 3u * 6u + 7u);
  std::map<int, std::set<std::string>> per_layer;
  for (const LoraAdapter& a : g.adapters) {
    const int layer = std::stoi(a.module.substr(std::string("model.layers.").size()));
    per_layer[layer].insert(leaf(a.module));
    const auto [in, out] = projections(m).at(leaf(a.module));
    INFO(a.module);
    CHECK(g.tensor(a.a).shape == std::vector<int64_t>{3, in});   // PEFT's A [R, in]
    CHECK(g.tensor(a.b).shape == std::vector<int64_t>{out, 3});  // and B [out, R]
    CHECK(g.tensor(a.base).name == a.module + ".weight");
    CHECK_FALSE(a.fan_in_fan_out);
    CHECK(a.scale == 2.0f);
  }
  const std::set<std::string> linear = {"in_proj_qkv", "in_proj_z", "out_proj",
                                        "gate_proj",   "up_proj",   "down_proj"};
  const std::set<std::string> attention = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                           "gate_proj", "up_proj", "down_proj"};
  for (int i = 0; i < m.layers; ++i)
    CHECK(per_layer[i] == (m.linear_attention_layer(i) ? linear : attention));
  CHECK(elements(g, g.parameters) == adapter_elements(m, 3, kDefaults));
  CHECK(g.parameters.size() == 2 * g.adapters.size());
  // Every tensor the model has is frozen, and nothing else: the conv, the norms (the gated one
  // too), A_log, dt_bias, the embedding and the gate projections among them.
  CHECK(names(g, g.frozen) == names(full, full.parameters));
  for (const char* name :
       {"model.layers.0.linear_attn.conv1d.weight", "model.layers.0.linear_attn.A_log",
        "model.layers.0.linear_attn.dt_bias", "model.layers.0.linear_attn.norm.weight",
        "model.layers.0.linear_attn.in_proj_a.weight", "model.layers.3.self_attn.q_norm.weight",
        "model.embed_tokens.weight", "model.norm.weight"})
    CHECK(names(g, g.frozen).count(name));
  for (TensorId t : g.frozen) CHECK(g.grad_of[static_cast<size_t>(t)] == kNoTensor);
}

TEST_CASE("qwen35 lora: the gate projections get adapters when named, read by the gates") {
  const testing::Qwen35Case c = testing::tiny_qwen35();
  LoraSpec lora;
  lora.rank = 2;
  lora.targets = {"in_proj_a", "in_proj_b"};
  const Graph g = build_training_model(c.model, c.shape, lora);
  REQUIRE(g.adapters.size() == 6u);  // two in each of the three Gated DeltaNet layers
  CHECK(elements(g, g.parameters) == adapter_elements(c.model, 2, {"in_proj_a", "in_proj_b"}));
  // gdn_gates reads the adapted projections, not the frozen matmuls' outputs.
  std::map<std::string, TensorId> merged;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::residual)
      for (TensorId t : op.outputs) merged[g.tensor(t).name] = t;
  int gates = 0;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::gdn_gates) continue;
    const std::string p = "model.layers." + std::to_string(gates++) + ".linear_attn.";
    INFO(p);
    REQUIRE(merged.count(p + "in_proj_a.lora.out"));
    CHECK(op.inputs[0] == merged.at(p + "in_proj_a.lora.out"));
    CHECK(op.inputs[1] == merged.at(p + "in_proj_b.lora.out"));
  }
  CHECK(gates == 3);
  lora.targets = {"in_proj_qkv", "conv1d"};
  CHECK_THROWS_WITH(build_training_model(c.model, c.shape, lora),
                    Catch::Contains("'conv1d' names no linear layer") &&
                        Catch::Contains("model.layers.{i}.linear_attn.in_proj_b"));
}

TEST_CASE("qwen35 lora: every projection adapted on generated configs, backward fits schemas") {
  LoraSpec lora;
  lora.rank = 2;
  for (const auto& [name, io] : projections(ModelConfig::preset("qwen3.5-0.8b")))
    lora.targets.push_back(name);
  std::set<std::string> all(lora.targets.begin(), lora.targets.end());
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const testing::Qwen35Case c = testing::random_qwen35(seed);
    INFO("seed " << seed << " layers " << c.model.layers << " chunk " << c.shape.delta_chunk);
    const Graph g = build_training_model(c.model, c.shape, lora);
    CHECK(elements(g, g.parameters) == adapter_elements(c.model, 2, all));
    CHECK(elements(g, g.frozen) == c.model.parameter_count());
    REQUIRE(g.parameter_grads.size() == g.parameters.size());
    for (const Op& op : g.ops)
      CHECK(check_operand_arity(op.kind, op.attrs, op.inputs.size(), op.outputs.size()).empty());
  }
}

TEST_CASE("qwen35 lora: every matrix llama.cpp's quantizer quantizes stays in its blocks") {
  // Rows of 256 values, as K-quants need: width, MLP, value channels and attention heads.
  testing::Qwen35Case c = testing::tiny_qwen35();
  ModelConfig& m = c.model;
  m.dim = 256;
  m.ffn = 256;
  m.head_size = 128;
  m.qwen35_layers.mrope_section = {16, 0, 0};  // a quarter of 128 rotated: 16 frequencies
  m.qwen35_layers.linear_key_head_dim = 64;
  m.qwen35_layers.linear_value_head_dim = 64;
  c.shape.loss_chunk = 64;
  LoraSpec lora;
  lora.rank = 4;
  lora.targets = lora_targets(lora, m);
  Graph g = build_model(m, c.shape);
  apply_lora(g, lora);
  // llama.cpp's quantizer (src/llama-quant.cpp, tensor_allows_quantization) quantizes the 2-D
  // weights but norms and ssm_conv1d: every projection (ssm_alpha and ssm_beta too) and the tied
  // embedding; a Q4_K_M file mixes q4_K and q6_K (ssm_a, ssm_dt, the conv and norms stay F32).
  const BlockFormat q4_k{12, 256, 144, "q4_K"}, q6_k{14, 256, 210, "q6_K"};
  std::vector<BlockWeight> blocks;
  for (TensorId t : g.frozen) {
    const Tensor& w = g.tensor(t);
    if (w.shape.size() == 2 && w.name.find("conv1d") == std::string::npos)
      blocks.push_back({w.name, blocks.size() % 3 == 0 ? q6_k : q4_k});
  }
  REQUIRE(blocks.size() == 1 + 3 * 8 + 1 * 7);  // embedding; 3 DeltaNet layers, 1 attention
  CHECK(store_block_weights(g, blocks, DType::f32).empty());  // none decoded
  for (TensorId t : g.frozen) {
    const Tensor& w = g.tensor(t);
    INFO(w.name);
    const bool listed = std::any_of(blocks.begin(), blocks.end(),
                                    [&](const BlockWeight& b) { return b.name == w.name; });
    CHECK((w.dtype == DType::blocks) == listed);
  }
}

// A model cut to fewer layers than the attention interval has no gated attention: its defaults
// drop q/k/v/o_proj rather than refuse the run; an interval of 1 (every layer gated attention)
// drops the Gated DeltaNet projections. A target the user names still has to match.
TEST_CASE("qwen35 lora: the defaults name only the layer kinds the model has") {
  ModelConfig m = testing::tiny_qwen35().model;
  m.layers = 1;
  REQUIRE(m.linear_attention_layer(0));
  CHECK(default_lora_targets(m) == std::vector<std::string>{"gate_proj", "up_proj", "down_proj",
                                                            "in_proj_qkv", "in_proj_z",
                                                            "out_proj"});
  TrainShape shape;
  shape.batch = 1;
  shape.seq = 8;
  LoraSpec lora;
  lora.rank = 2;
  const Graph g = build_training_model(m, shape, lora);
  CHECK(g.adapters.size() == 6);
  lora.targets = {"q_proj"};
  CHECK_THROWS_WITH(build_training_model(m, shape, lora),
                    Catch::Contains("LoRA target 'q_proj' names no linear layer"));
  ModelConfig full = testing::tiny_qwen35().model;
  full.qwen35_layers.full_attention_interval = 1;
  CHECK(default_lora_targets(full) == std::vector<std::string>{"q_proj", "k_proj", "v_proj",
                                                               "o_proj", "gate_proj", "up_proj",
                                                               "down_proj"});
  lora.targets.clear();
  CHECK(build_training_model(full, shape, lora).adapters.size() == 4 * 7);
  // The family alone, with no layers to look at (a GGUF adapter's arch): every kind.
  ModelConfig family;
  family.arch = Architecture::llama;
  family.qwen35 = true;
  CHECK(default_lora_targets(family).size() == kDefaults.size());
}

}  // namespace remat
