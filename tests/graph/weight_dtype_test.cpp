// A frozen base stored in 16 bits: which tensors change dtype, what the planner then counts, and
// the refusals; a QLoRA base's block weights: which stay in blocks, and how GPT-2's are held.
#include <catch2/catch.hpp>

#include "graph/lora.h"
#include "graph/model_builder.h"
#include "graph/op_schema.h"
#include "graph/weight_dtype.h"

namespace remat {
namespace {

LoraSpec rank(int r) {
  LoraSpec l;
  l.rank = r;
  return l;
}

TrainShape with_weights(DType t) {
  TrainShape s;
  s.batch = 2;
  s.seq = 16;
  s.weight_dtype = t;
  return s;
}

}  // namespace

TEST_CASE("weights dtype: frozen tensors of two or more dimensions take it, nothing else does") {
  for (const char* model : {"tiny", "llama-tiny"}) {
    for (DType t : {DType::f16, DType::bf16}) {
      DYNAMIC_SECTION(model << " " << dtype_name(t)) {
        const Graph g = build_training_model(ModelConfig::preset(model), with_weights(t), rank(4));
        REQUIRE(!g.frozen.empty());
        int narrowed = 0;
        for (TensorId id : g.frozen) {
          const Tensor& w = g.tensor(id);
          REQUIRE(w.dtype == (w.shape.size() >= 2 ? t : DType::f32));
          narrowed += w.shape.size() >= 2;
        }
        REQUIRE(narrowed > 0);
        // Trained adapters, gradients, moments and activations stay f32.
        for (const Tensor& x : g.tensors) {
          bool frozen = false;
          for (TensorId id : g.frozen) frozen = frozen || id == x.id;
          if (!frozen) REQUIRE((x.dtype == DType::f32 || x.dtype == DType::u32));
        }
      }
    }
  }
}

TEST_CASE("weights dtype: 16 bits without LoRA or with a non-float type is refused") {
  const ModelConfig m = ModelConfig::preset("tiny");
  REQUIRE_THROWS_WITH(build_training_model(m, with_weights(DType::bf16)),
                      "--weights-dtype bf16 applies to frozen weights: use it with --lora");
  REQUIRE_THROWS_AS(build_training_model(m, with_weights(DType::u32), rank(2)),
                    std::invalid_argument);
  REQUIRE_NOTHROW(build_training_model(m, with_weights(DType::f32)));
  REQUIRE(parse_weight_dtype("bf16") == DType::bf16);
  REQUIRE(parse_weight_dtype("f16") == DType::f16);
  REQUIRE_THROWS_AS(parse_weight_dtype("q4_0"), std::invalid_argument);
}

TEST_CASE("block weights: a token embedding stays in its blocks, scaled (Gemma 3) or not") {
  // The block gather multiplies by Gemma's sqrt(width) as the float gather does, so the table,
  // and the tied head that reads the same tensor, keep their blocks.
  const BlockFormat q8_0{8, 32, 34, "q8_0"};
  for (const char* model : {"gemma3-270m", "llama-tiny"}) {
    DYNAMIC_SECTION(model) {
      ModelConfig m = ModelConfig::preset(model);
      m.layers = 1;
      TrainShape s = with_weights(DType::f32);
      s.loss_chunk = 64;
      s.seq = 32;
      s.block_weights = {{"model.embed_tokens.weight", q8_0},
                         {"model.layers.0.self_attn.q_proj.weight", q8_0}};
      Graph g = build_model(m, s);
      LoraSpec l = rank(4);
      l.targets = lora_targets(l, m);
      apply_lora(g, l);
      REQUIRE(store_block_weights(g, s.block_weights, DType::f32).empty());
      for (const BlockWeight& b : s.block_weights)
        for (const Tensor& t : g.tensors)
          if (t.name == b.name) REQUIRE(t.dtype == DType::blocks);
    }
  }
}

// The matmul reading `weight` in `g`.
const Op& matmul_of(const Graph& g, const std::string& weight) {
  for (const Op& op : g.ops)
    if (op.kind == OpKind::matmul && g.tensor(op.inputs[1]).name == weight) return op;
  FAIL("no matmul reads " << weight);
  return g.ops.front();
}

TEST_CASE(
    "block weights: GPT-2's Conv1D matrices in blocks are held [out, in], its embedding too") {
  // A GGUF file stores them as rows along `in`; the others stay [in, out] as Hugging Face has it.
  const BlockFormat q8_0{8, 32, 34, "q8_0"};
  ModelConfig m = ModelConfig::preset("tiny");
  m.layers = 1;
  TrainShape s = with_weights(DType::f32);
  s.block_weights = {{"wte.weight", q8_0},
                     {"h.0.attn.c_attn.weight", q8_0},
                     {"h.0.mlp.c_fc.weight", q8_0},
                     {"h.0.mlp.c_proj.weight", q8_0}};
  CHECK(conv1d_held_out_in(s, "h.0.mlp.c_fc.weight"));
  CHECK_FALSE(conv1d_held_out_in(s, "h.0.attn.c_proj.weight"));  // not offered in blocks
  CHECK_FALSE(conv1d_held_out_in(s, "wte.weight"));              // not a Conv1D weight
  const int64_t c = m.dim;
  const Graph g = build_training_model(m, s, rank(4));
  const auto tensor = [&](const std::string& name) -> const Tensor& {
    for (const Tensor& t : g.tensors)
      if (t.name == name) return t;
    FAIL("no tensor " << name);
    return g.tensors.front();
  };
  for (const BlockWeight& b : s.block_weights) REQUIRE(tensor(b.name).dtype == DType::blocks);
  CHECK(tensor("h.0.attn.c_attn.weight").shape == std::vector<int64_t>{3 * c, c});
  CHECK(tensor("h.0.mlp.c_proj.weight").shape == std::vector<int64_t>{c, 4 * c});
  CHECK(tensor("h.0.attn.c_proj.weight").shape == std::vector<int64_t>{c, c});
  CHECK(tensor("h.0.attn.c_proj.weight").dtype == DType::f32);
  CHECK(matmul_of(g, "h.0.mlp.c_fc.weight").attrs.w_layout == WeightLayout::out_in);
  CHECK(matmul_of(g, "h.0.attn.c_proj.weight").attrs.w_layout == WeightLayout::in_out);
  // The adapters keep PEFT's shapes: A [r, in], B [out, r].
  CHECK(tensor("h.0.mlp.c_proj.lora_A.weight").shape == std::vector<int64_t>{4, 4 * c});
  CHECK(tensor("h.0.mlp.c_proj.lora_B.weight").shape == std::vector<int64_t>{c, 4});
  for (const LoraAdapter& a : g.adapters)
    CHECK(a.fan_in_fan_out == (g.tensor(a.base).name == "h.0.attn.c_proj.weight"));
}

TEST_CASE("block weights: GPT-2's embedding beside a 16-bit position table is decoded") {
  // The block gather adds f32 position rows only: with --weights-dtype bf16 the table is
  // returned by name for the caller to decode.
  const BlockFormat q8_0{8, 32, 34, "q8_0"};
  ModelConfig m = ModelConfig::preset("tiny");
  m.layers = 1;
  TrainShape s = with_weights(DType::bf16);
  s.block_weights = {{"wte.weight", q8_0}, {"h.0.mlp.c_fc.weight", q8_0}};
  Graph g = build_model(m, s);
  LoraSpec l = rank(4);
  l.targets = lora_targets(l, m);
  apply_lora(g, l);
  store_frozen_weights(g, s.weight_dtype);
  CHECK(store_block_weights(g, s.block_weights, DType::f32) ==
        std::vector<std::string>{"wte.weight"});
}

}  // namespace remat
