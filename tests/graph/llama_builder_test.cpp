// The Llama graph: Hugging Face parameter names and nn.Linear shapes, separate q/k/v/gate/up
// matmuls, RoPE on q and k with their own head counts, tied or untied head, parameter counts
// equal to ModelConfig's, and the block-locality the planner relies on.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "graph/autodiff.h"
#include "graph/gpt_builder.h"
#include "graph/llama_builder.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"
#include "tests/graph/random_llama.h"

namespace remat {
namespace {

using Shape = std::vector<int64_t>;

std::map<std::string, Shape> parameter_shapes(const Graph& g) {
  std::map<std::string, Shape> out;
  for (TensorId p : g.parameters) out[g.tensor(p).name] = g.tensor(p).shape;
  return out;
}

uint64_t parameter_total(const Graph& g) {
  uint64_t n = 0;
  for (TensorId p : g.parameters) n += static_cast<uint64_t>(g.tensor(p).elements());
  return n;
}

int count_kind(const Graph& g, OpKind k) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == k;
  return n;
}

const Op& forward_op_writing(const Graph& g, const std::string& output) {
  for (const Op& op : g.ops)
    for (TensorId t : op.outputs)
      if (g.tensor(t).name == output) return op;
  FAIL("no op writes " << output);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("llama graph: SmolLM2-135M has the Hugging Face names and nn.Linear shapes") {
  const ModelConfig m = ModelConfig::preset("smollm2-135m");
  const Graph g = build_llama(m, TrainShape{1, 16, 0.0f, DType::f32});
  const auto shapes = parameter_shapes(g);
  CHECK(shapes.size() == 1 + 30 * 9 + 1);  // tied: no lm_head.weight
  CHECK(shapes.at("model.embed_tokens.weight") == Shape{49152, 576});
  CHECK(shapes.at("model.layers.0.input_layernorm.weight") == Shape{576});
  CHECK(shapes.at("model.layers.29.self_attn.q_proj.weight") == Shape{576, 576});
  CHECK(shapes.at("model.layers.29.self_attn.k_proj.weight") == Shape{192, 576});
  CHECK(shapes.at("model.layers.29.self_attn.v_proj.weight") == Shape{192, 576});
  CHECK(shapes.at("model.layers.3.self_attn.o_proj.weight") == Shape{576, 576});
  CHECK(shapes.at("model.layers.3.post_attention_layernorm.weight") == Shape{576});
  CHECK(shapes.at("model.layers.3.mlp.gate_proj.weight") == Shape{1536, 576});
  CHECK(shapes.at("model.layers.3.mlp.up_proj.weight") == Shape{1536, 576});
  CHECK(shapes.at("model.layers.3.mlp.down_proj.weight") == Shape{576, 1536});
  CHECK(shapes.at("model.norm.weight") == Shape{576});
  CHECK(parameter_total(g) == m.parameter_count());
  CHECK(parameter_total(g) == 134515008u);  // SmolLM2-135M as published
}

TEST_CASE("llama graph: Qwen2 has q/k/v biases and nothing else has one") {
  const ModelConfig m = ModelConfig::preset("qwen2.5-0.5b");
  const Graph g = build_llama(m, TrainShape{1, 8, 0.0f, DType::f32});
  const auto shapes = parameter_shapes(g);
  CHECK(shapes.at("model.layers.0.self_attn.q_proj.bias") == Shape{896});
  CHECK(shapes.at("model.layers.0.self_attn.k_proj.bias") == Shape{128});
  CHECK(shapes.at("model.layers.0.self_attn.v_proj.bias") == Shape{128});
  int biases = 0;
  for (const auto& [name, shape] : shapes) biases += name.ends_with(".bias");
  CHECK(biases == 3 * 24);
  CHECK(parameter_total(g) == m.parameter_count());
}

TEST_CASE("llama graph: parameter count equals ModelConfig's on every Llama preset") {
  for (const char* name :
       {"llama-tiny", "smollm2-360m", "llama3.2-1b", "llama3.2-3b", "qwen3-0.6b", "qwen3-1.7b"}) {
    INFO(name);
    const ModelConfig m = ModelConfig::preset(name);
    CHECK(parameter_total(build_llama(m, TrainShape{1, 4, 0.0f, DType::f32})) ==
          m.parameter_count());
  }
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const auto c = testing::random_llama(seed);
    INFO("seed " << seed);
    CHECK(parameter_total(build_llama(c.model, c.shape)) == c.model.parameter_count());
  }
}

TEST_CASE("llama graph: the chain, the untied head, RoPE and grouped-query attention") {
  const ModelConfig m = ModelConfig::preset("llama-tiny");  // 4 heads, 2 KV heads, untied
  const TrainShape s{3, 23, 0.0f, DType::f32};
  const Graph g = build_llama(m, s);
  REQUIRE(g.blocks.size() == 6);
  CHECK(g.blocks.front().name == "embedding");
  CHECK(g.blocks[1].name == "model.layers.0");
  CHECK(g.blocks.back().name == "head");
  CHECK(g.tensor(g.parameters.back()).name == "lm_head.weight");
  const Op& head = forward_op_writing(g, "head.logits");
  CHECK(g.tensor(head.inputs[slot::matmul::weight]).name == "lm_head.weight");
  CHECK(head.attrs.w_layout == WeightLayout::out_in);
  CHECK(g.logits == head.outputs[0]);
  const Op& att = forward_op_writing(g, "model.layers.2.self_attn.out");
  CHECK(att.kind == OpKind::gqa_attention);
  CHECK(att.attrs.heads == 4);
  CHECK(att.attrs.kv_heads == 2);
  CHECK(g.tensor(att.inputs[slot::gqa_attention::q]).shape == Shape{3, 23, 128});
  CHECK(g.tensor(att.inputs[slot::gqa_attention::k]).shape == Shape{3, 23, 64});
  CHECK(g.tensor(att.inputs[slot::gqa_attention::v]).name == "model.layers.2.self_attn.v_proj.out");
  const Op& qr = forward_op_writing(g, "model.layers.2.self_attn.q_rope");
  const Op& kr = forward_op_writing(g, "model.layers.2.self_attn.k_rope");
  CHECK(qr.kind == OpKind::rope);
  CHECK(qr.attrs.heads == 4);
  CHECK(kr.attrs.heads == 2);
  CHECK(kr.attrs.rope_theta == m.rope_theta);
  CHECK(forward_op_writing(g, "model.layers.0.input_layernorm.out").attrs.eps == m.norm_eps);
  CHECK(count_kind(g, OpKind::matmul) == 4 * 7 + 1);  // q, k, v, o, gate, up, down; head
  CHECK(count_kind(g, OpKind::swiglu) == 4);
  CHECK(count_kind(g, OpKind::rmsnorm) == 2 * 4 + 1);
  CHECK(count_kind(g, OpKind::token_embedding) == 1);
  for (const Op& op : g.ops)
    if (op.kind == OpKind::matmul) CHECK(op.attrs.w_layout == WeightLayout::out_in);
  // Each block reads only persistent tensors, its chain input and its own tensors.
  for (size_t b = 0; b < g.blocks.size(); ++b)
    for (int i : g.blocks[b].forward_ops)
      for (TensorId t : g.ops[static_cast<size_t>(i)].inputs) {
        const Tensor& x = g.tensor(t);
        CHECK((x.persistent || t == g.blocks[b].input || x.block == static_cast<int>(b)));
      }
}

TEST_CASE("llama graph: tied heads read the token embedding and every op fits its schema") {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const auto c = testing::random_llama(seed);
    INFO("seed " << seed);
    const Graph g = build_training_model(c.model, c.shape);
    const Op& head = g.ops[static_cast<size_t>(g.blocks.back().forward_ops[1])];
    CHECK((g.tensor(head.inputs[slot::matmul::weight]).name == "model.embed_tokens.weight") ==
          c.model.tied_head);
    for (const Op& op : g.ops)
      CHECK(check_operand_arity(op.kind, op.attrs, op.inputs.size(), op.outputs.size()).empty());
  }
}

TEST_CASE("llama graph: Qwen3 normalises each head of q and k before RoPE") {
  const ModelConfig m = ModelConfig::preset("qwen3-0.6b");  // 16 heads, 8 KV heads of 128
  const TrainShape s{2, 8, 0.0f, DType::f32};
  const Graph g = build_llama(m, s);
  const auto shapes = parameter_shapes(g);
  CHECK(shapes.at("model.layers.0.self_attn.q_proj.weight") == Shape{2048, 1024});
  CHECK(shapes.at("model.layers.0.self_attn.k_proj.weight") == Shape{1024, 1024});
  CHECK(shapes.at("model.layers.0.self_attn.o_proj.weight") == Shape{1024, 2048});
  CHECK(shapes.at("model.layers.27.self_attn.q_norm.weight") == Shape{128});
  CHECK(shapes.at("model.layers.27.self_attn.k_norm.weight") == Shape{128});
  CHECK(parameter_total(g) == 596049920u);  // Qwen3-0.6B as published
  const Op& qn = forward_op_writing(g, "model.layers.1.self_attn.q_norm.out");
  CHECK(qn.kind == OpKind::rmsnorm);
  CHECK(qn.attrs.eps == 1e-6f);
  CHECK(g.tensor(qn.inputs[slot::rmsnorm::x]).name == "model.layers.1.self_attn.q_proj.out");
  CHECK(g.tensor(qn.outputs[slot::rmsnorm::rstd]).shape == Shape{2 * 8 * 16});
  const Op& kn = forward_op_writing(g, "model.layers.1.self_attn.k_norm.out");
  CHECK(g.tensor(kn.outputs[slot::rmsnorm::rstd]).shape == Shape{2 * 8 * 8});
  const Op& qr = forward_op_writing(g, "model.layers.1.self_attn.q_rope");
  CHECK(g.tensor(qr.inputs[slot::rope::x]).name == "model.layers.1.self_attn.q_norm.out");
  CHECK(count_kind(g, OpKind::rmsnorm) == 4 * 28 + 1);
  // Trained in full fine-tuning: the gains get gradients (LoRA freezes them with the rest).
  const Graph t = build_training_model(m, s);
  int gains = 0;
  for (const Op& op : t.ops)
    if (op.kind == OpKind::rmsnorm_backward && !op.attrs.frozen &&
        t.tensor(op.outputs[slot::rmsnorm_backward::dweight]).name.find("_norm.weight") !=
            std::string::npos)
      ++gains;
  CHECK(gains == 2 * 28);
}

TEST_CASE("llama graph: Llama 3.2's RoPE ops carry the llama3 factors") {
  const ModelConfig m = ModelConfig::preset("llama3.2-1b");
  const Graph g = build_llama(m, TrainShape{1, 4, 0.0f, DType::f32});
  const Op& kr = forward_op_writing(g, "model.layers.0.self_attn.k_rope");
  CHECK(kr.attrs.rope_llama3 == Llama3Scaling{32.0f, 1.0f, 4.0f, 8192});
  CHECK(kr.attrs.rope_theta == 500000.0f);
  const Graph tiny =
      build_llama(ModelConfig::preset("llama-tiny"), TrainShape{1, 4, 0.0f, DType::f32});
  const Op& plain = forward_op_writing(tiny, "model.layers.0.self_attn.k_rope");
  CHECK(plain.attrs.rope_llama3 == Llama3Scaling{});
}

TEST_CASE(
    "llama graph: build_model dispatches, build_gpt and build_llama refuse the other family") {
  const TrainShape s{2, 8, 0.0f, DType::f32};
  CHECK(build_model(ModelConfig::preset("tiny"), s).tensor(1).name == "targets");
  CHECK(count_kind(build_model(ModelConfig::preset("llama-tiny"), s), OpKind::rope) == 8);
  CHECK_THROWS_AS(build_gpt(ModelConfig::preset("llama-tiny"), s), std::invalid_argument);
  CHECK_THROWS_AS(build_llama(ModelConfig::preset("tiny"), s), std::invalid_argument);
  TrainShape dropout = s;
  dropout.dropout = 0.1f;
  CHECK_THROWS_WITH(build_model(ModelConfig::preset("llama-tiny"), dropout),
                    Catch::Contains("no dropout"));
  ModelConfig odd = ModelConfig::preset("llama-tiny");
  odd.kv_heads = 3;
  CHECK_THROWS_AS(build_model(odd, s), std::invalid_argument);
}

TEST_CASE("llama graph: Gemma 3's sandwich norms, scaled embedding, GeGLU and local layers") {
  ModelConfig m = ModelConfig::preset("gemma3-270m");
  const Graph big = build_llama(m, TrainShape{1, 4, 0.0f, DType::f32});
  CHECK(parameter_total(big) == 268098176u);  // google/gemma-3-270m as published
  const auto shapes = parameter_shapes(big);
  CHECK(shapes.at("model.layers.17.post_feedforward_layernorm.weight") == Shape{640});
  CHECK(shapes.at("model.layers.0.pre_feedforward_layernorm.weight") == Shape{640});
  CHECK(shapes.at("model.layers.0.self_attn.q_proj.weight") == Shape{1024, 640});
  CHECK(shapes.count("lm_head.weight") == 0);
  // A small Gemma: window 4 at T 16, so local layers carry it; scalar 24 against head size 256.
  m.layers = 3;
  m.gemma.pattern = 2;
  m.gemma.sliding_window = 4;
  m.gemma.query_scalar = 24.0f;
  const Graph g = build_llama(m, TrainShape{2, 16, 0.0f, DType::f32});
  CHECK(count_kind(g, OpKind::rmsnorm) == 3 * 6 + 1);  // 4 sandwich norms + q/k norms, final
  for (const Op& op : g.ops)
    if (op.kind == OpKind::rmsnorm) CHECK(op.attrs.norm_offset);
  const Op& emb = forward_op_writing(g, "model.embed_tokens.out");
  CHECK(emb.attrs.scale == static_cast<float>(std::sqrt(640.0)));
  const Op& mlp = forward_op_writing(g, "model.layers.0.mlp.act");
  CHECK(mlp.kind == OpKind::swiglu);
  CHECK(mlp.attrs.gelu_gate);
  // Layer 1 is global (rope_theta, all keys); 0 and 2 local (their base, window 4).
  for (int i = 0; i < 3; ++i) {
    INFO("layer " << i);
    const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
    const Op& att = forward_op_writing(g, p + "out");
    const Op& rope = forward_op_writing(g, p + "q_rope");
    CHECK(att.attrs.window == (i == 1 ? 0 : 4));
    CHECK(att.attrs.attn_scale == static_cast<float>(1.0 / std::sqrt(24.0)));
    CHECK(rope.attrs.rope_theta == (i == 1 ? 1000000.0f : 10000.0f));
    CHECK(rope.attrs.rope_llama3 == Llama3Scaling{});
  }
  // Linear RoPE scaling (Gemma 3 4B's factor 8) reaches the global layers only.
  m.gemma.rope_linear = 8.0f;
  const Graph linear = build_llama(m, TrainShape{2, 16, 0.0f, DType::f32});
  CHECK(forward_op_writing(linear, "model.layers.1.self_attn.k_rope").attrs.rope_llama3 ==
        linear_scaling(8.0f));
  CHECK(forward_op_writing(linear, "model.layers.0.self_attn.k_rope").attrs.rope_llama3 ==
        Llama3Scaling{});
  m.gemma.rope_linear = 0.0f;
  // The residual adds the normed attention output: post_attention_layernorm sits between.
  const Op& res = forward_op_writing(g, "model.layers.0.attn_residual");
  CHECK(g.tensor(res.inputs[slot::residual::b]).name ==
        "model.layers.0.post_attention_layernorm.out");
  // A window no shorter than the sequence and the default scale change nothing: left at 0.
  m.gemma.sliding_window = 16;
  m.gemma.query_scalar = 256.0f;
  const Graph plain = build_llama(m, TrainShape{2, 16, 0.0f, DType::f32});
  const Op& att0 = forward_op_writing(plain, "model.layers.0.self_attn.out");
  CHECK(att0.attrs.window == 0);
  CHECK(att0.attrs.attn_scale == 0.0f);
}

}  // namespace remat
