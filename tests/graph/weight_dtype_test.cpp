// A frozen base stored in 16 bits: which tensors change dtype, what the planner then counts, and
// the refusals.
#include <catch2/catch.hpp>

#include "graph/model_builder.h"
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

TEST_CASE("block weights: a scaled token embedding (Gemma 3) is decoded, the projections are not") {
  // The block gather does not multiply by Gemma's sqrt(width): its table, and the tied head that
  // reads the same tensor, stay decoded; a plain Llama embedding stays in its blocks.
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
      const Graph g = build_training_model(m, s, rank(4));
      const auto dtype_of = [&](const std::string& name) {
        for (const Tensor& t : g.tensors)
          if (t.name == name) return t.dtype;
        FAIL("no tensor " << name);
        return DType::f32;
      };
      REQUIRE(dtype_of("model.layers.0.self_attn.q_proj.weight") == DType::blocks);
      REQUIRE(dtype_of("model.embed_tokens.weight") ==
              (std::string(model) == "gemma3-270m" ? DType::f32 : DType::blocks));
    }
  }
}

}  // namespace remat
