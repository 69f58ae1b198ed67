// LoRA as a graph transform: PEFT's target matching, the adapters' shapes and names, frozen
// weights without gradients or moments, and backward ops that read nothing only a frozen
// weight's gradient needs.
#include <catch2/catch.hpp>

#include <set>

#include "graph/autodiff.h"
#include "graph/gpt_builder.h"
#include "graph/lora.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"

namespace remat {
namespace {

const Tensor* find(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

ModelConfig small() {
  ModelConfig m = ModelConfig::preset("tiny");
  m.layers = 2;
  return m;
}

}  // namespace

TEST_CASE("lora: targets match the end of the module path as PEFT's target_modules do") {
  CHECK(lora_target_matches("h.0.attn.c_proj", {"c_proj"}));
  CHECK(lora_target_matches("h.0.mlp.c_proj", {"c_proj"}));
  CHECK(lora_target_matches("h.0.attn.c_proj", {"attn.c_proj"}));
  CHECK_FALSE(lora_target_matches("h.0.mlp.c_proj", {"attn.c_proj"}));
  CHECK_FALSE(lora_target_matches("h.0.attn.xc_proj", {"c_proj"}));  // whole components only
  CHECK(lora_target_matches("c_proj", {"c_proj"}));
  CHECK(lora_target_matches("model.layers.3.self_attn.q_proj", {"k_proj", "q_proj"}));
  CHECK(parse_lora_targets("c_attn,mlp.c_fc") == std::vector<std::string>{"c_attn", "mlp.c_fc"});
  CHECK_THROWS_AS(parse_lora_targets("c_attn,,c_fc"), std::invalid_argument);
  CHECK_THROWS_AS(parse_lora_targets("c_attn;rm"), std::invalid_argument);
}

TEST_CASE("lora: adapters on every default target, base frozen, PEFT shapes and names") {
  const ModelConfig m = small();
  LoraSpec spec;
  spec.rank = 3;
  const Graph g = build_training_gpt(m, TrainShape{}, spec);
  const Graph full = build_training_gpt(m, TrainShape{});
  CHECK(g.frozen.size() == full.parameters.size());
  REQUIRE(g.adapters.size() == 4u * m.layers);
  CHECK(g.parameters.size() == 2 * g.adapters.size());
  CHECK(g.parameter_grads.size() == g.parameters.size());
  CHECK(g.adam_m.size() == g.parameters.size());
  const Tensor* a = find(g, "h.1.mlp.c_fc.lora_A.weight");
  const Tensor* b = find(g, "h.1.mlp.c_fc.lora_B.weight");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->shape == std::vector<int64_t>{3, m.dim});
  CHECK(b->shape == std::vector<int64_t>{4 * m.dim, 3});
  CHECK(g.adapters[0].module == "h.0.attn.c_attn");
  CHECK(g.adapters[0].fan_in_fan_out);
  CHECK(g.adapters[0].scale == 2.0f);  // default alpha 2R
  // Frozen weights have neither gradient nor moments.
  for (TensorId t : g.frozen) {
    CHECK(g.grad_of[static_cast<size_t>(t)] == kNoTensor);
    CHECK(find(g, "adam.m." + g.tensor(t).name) == nullptr);
  }
}

TEST_CASE("lora: frozen weights' backward ops write dx only and do not read x") {
  LoraSpec spec;
  spec.rank = 2;
  spec.targets = {"attn.c_attn"};
  const Graph g = build_training_gpt(small(), TrainShape{}, spec);
  const std::set<TensorId> frozen(g.frozen.begin(), g.frozen.end());
  int frozen_matmuls = 0, trained_matmuls = 0, embedding_backward = 0;
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::embedding_backward) ++embedding_backward;
    if (op.kind != OpKind::matmul_backward && op.kind != OpKind::layernorm_backward) continue;
    CHECK(check_operand_arity(op.kind, op.attrs, op.inputs.size(), op.outputs.size()).empty());
    if (op.kind != OpKind::matmul_backward) {
      CHECK(op.attrs.frozen);
      CHECK(op.outputs.size() == 1);
      continue;
    }
    const TensorId w = op.inputs[slot::matmul_backward::weight];
    if (frozen.count(w)) {
      ++frozen_matmuls;
      CHECK(op.attrs.frozen);
      CHECK(op.inputs.size() == 2);
      CHECK(op.outputs.size() == 1);
    } else {
      ++trained_matmuls;
      CHECK_FALSE(op.attrs.frozen);
      CHECK(op.outputs.size() == 2);
    }
  }
  CHECK(embedding_backward == 0);  // wte and wpe are frozen: nothing to write
  CHECK(trained_matmuls == 2 * 2);
  CHECK(frozen_matmuls == 2 * 4 + 1);  // four per layer and the tied head
}

TEST_CASE("lora: alpha sets the merge scale and unknown targets name the layers there are") {
  LoraSpec spec;
  spec.rank = 4;
  spec.alpha = 6;
  spec.targets = {"c_proj"};
  const Graph g = build_training_gpt(small(), TrainShape{}, spec);
  CHECK(g.adapters.size() == 2u * 2);
  int merges = 0;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::residual && op.attrs.scale != 1.0f) {
      CHECK(op.attrs.scale == 1.5f);
      ++merges;
    }
  CHECK(merges == 4);
  spec.targets = {"q_proj"};
  try {
    build_training_gpt(small(), TrainShape{}, spec);
    FAIL("an unknown target was accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("'q_proj'") != std::string::npos);
    CHECK(std::string(e.what()).find("h.{i}.mlp.c_fc") != std::string::npos);
  }
  spec.targets = {"wte"};  // the tied embedding/head is no linear layer
  CHECK_THROWS_AS(build_training_gpt(small(), TrainShape{}, spec), std::invalid_argument);
  spec.targets = {};
  spec.rank = 0;
  Graph fwd = build_gpt(small(), TrainShape{});
  CHECK_THROWS_AS(apply_lora(fwd, spec), std::invalid_argument);
}

TEST_CASE("lora: nn.Linear weights with Hugging Face Llama names get PEFT-layout adapters") {
  CHECK(default_lora_targets(ModelConfig::preset("llama-tiny")) ==
        std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                 "down_proj"});
  // One block of two [out, in] matmuls, named as a Llama checkpoint names them.
  Graph g;
  g.blocks.push_back({"model.layers.0", kNoTensor, kNoTensor, {}, {}});
  const TensorId x = g.add_tensor("x", {6, 8}, DType::f32, Role::activation, 0, false);
  const TensorId q = g.add_tensor("model.layers.0.self_attn.q_proj.weight", {5, 8}, DType::f32,
                                  Role::parameter, -1, true);
  const TensorId o = g.add_tensor("model.layers.0.self_attn.o_proj.weight", {8, 5}, DType::f32,
                                  Role::parameter, -1, true);
  g.parameters = {q, o};
  const TensorId y = g.add_tensor("q", {6, 5}, DType::f32, Role::activation, 0, false);
  const TensorId z = g.add_tensor("o", {6, 8}, DType::f32, Role::activation, 0, false);
  OpAttrs linear;
  linear.w_layout = WeightLayout::out_in;
  g.blocks[0].forward_ops.push_back(g.add_op({OpKind::matmul, {x, q}, {y}, linear, 0}));
  g.blocks[0].forward_ops.push_back(g.add_op({OpKind::matmul, {y, o}, {z}, linear, 0}));
  g.blocks[0].output = z;
  LoraSpec spec;
  spec.rank = 2;
  spec.targets = default_lora_targets(ModelConfig::preset("llama-tiny"));
  CHECK_THROWS_AS(apply_lora(g, spec), std::invalid_argument);  // no k_proj, ... here
  CHECK(g.frozen.empty());  // the refusal left the graph as it was
  CHECK(g.parameters.size() == 2);
  spec.targets = {"q_proj", "o_proj"};
  apply_lora(g, spec);
  REQUIRE(g.adapters.size() == 2);
  CHECK(g.adapters[0].module == "model.layers.0.self_attn.q_proj");
  CHECK_FALSE(g.adapters[0].fan_in_fan_out);
  CHECK(g.tensor(g.adapters[0].a).shape == std::vector<int64_t>{2, 8});
  CHECK(g.tensor(g.adapters[0].b).shape == std::vector<int64_t>{5, 2});
  CHECK(g.tensor(g.adapters[1].a).shape == std::vector<int64_t>{2, 5});
  CHECK(g.frozen == std::vector<TensorId>{q, o});
  // o_proj reads q_proj's adapted output, and the block ends in o_proj's.
  CHECK(g.blocks[0].output == find(g, "model.layers.0.self_attn.o_proj.lora.out")->id);
  CHECK(g.ops[1].inputs[0] == find(g, "model.layers.0.self_attn.q_proj.lora.out")->id);
}

TEST_CASE("lora: the adapted output feeds every later reader of the base output") {
  LoraSpec spec;
  spec.rank = 2;
  spec.targets = {"attn.c_attn"};
  const Graph g = build_training_gpt(small(), TrainShape{}, spec);
  const Tensor* base = find(g, "h.0.attn.c_attn.out");
  const Tensor* merged = find(g, "h.0.attn.c_attn.lora.out");
  REQUIRE(base);
  REQUIRE(merged);
  for (const Block& b : g.blocks)
    for (int i : b.forward_ops) {
      const Op& op = g.ops[static_cast<size_t>(i)];
      if (op.kind == OpKind::attention) CHECK(op.inputs[0] != base->id);
      if (op.kind == OpKind::attention && b.name == "h.0") CHECK(op.inputs[0] == merged->id);
    }
}

}  // namespace remat

namespace remat {

TEST_CASE("lora: Qwen3's q/k norm gains are frozen with the base, adapters on PEFT's targets") {
  ModelConfig m = ModelConfig::preset("qwen3-0.6b");
  m.layers = 2;
  LoraSpec spec;
  spec.rank = 4;
  spec.targets = default_lora_targets(m);
  const Graph g = build_training_model(m, TrainShape{1, 8, 0.0f, DType::f32}, spec);
  CHECK(g.adapters.size() == 2 * 7);
  std::set<std::string> frozen;
  for (TensorId t : g.frozen) frozen.insert(g.tensor(t).name);
  CHECK(frozen.count("model.layers.1.self_attn.q_norm.weight") == 1);
  CHECK(frozen.count("model.layers.1.self_attn.k_norm.weight") == 1);
  for (TensorId p : g.parameters)
    CHECK(g.tensor(p).name.find(".lora_") != std::string::npos);  // only adapters train
  for (const Op& op : g.ops)
    if (op.kind == OpKind::rmsnorm_backward) CHECK(op.attrs.frozen);
}

TEST_CASE("lora: Gemma 3's sandwich norms are frozen, adapters on the seven projections") {
  ModelConfig m = ModelConfig::preset("gemma3-270m");
  m.layers = 2;
  LoraSpec spec;
  spec.rank = 4;
  spec.targets = default_lora_targets(m);
  const Graph g = build_training_model(m, TrainShape{1, 8, 0.0f, DType::f32}, spec);
  CHECK(g.adapters.size() == 2 * 7);
  std::set<std::string> frozen;
  for (TensorId t : g.frozen) frozen.insert(g.tensor(t).name);
  CHECK(frozen.count("model.layers.1.post_feedforward_layernorm.weight") == 1);
  CHECK(frozen.count("model.layers.0.pre_feedforward_layernorm.weight") == 1);
  for (TensorId p : g.parameters) CHECK(g.tensor(p).name.find(".lora_") != std::string::npos);
  for (const Op& op : g.ops)
    if (op.kind == OpKind::rmsnorm_backward) {
      CHECK(op.attrs.frozen);
      CHECK(op.attrs.norm_offset);  // the backward keeps Gemma's 1 + w
    }
}

}  // namespace remat
