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

}  // namespace remat
