// The planner counts a frozen base stored in 16 bits (TrainShape::weight_dtype) at its real
// size: persistent bytes shrink by two bytes per element of every frozen 2-D weight.
#include <catch2/catch.hpp>

#include "planner/plan.h"

namespace remat {
namespace {

TrainShape with_weights(DType t) {
  TrainShape s;
  s.batch = 2;
  s.seq = 16;
  s.weight_dtype = t;
  return s;
}

LoraSpec rank(int r) {
  LoraSpec l;
  l.rank = r;
  return l;
}

}  // namespace

TEST_CASE("weights dtype: the plan counts a 16-bit frozen weight at two bytes an element") {
  const ModelConfig m = ModelConfig::preset("tiny");
  const Plan f32 = plan(m, with_weights(DType::f32), Policy{}, std::nullopt, 256, nullptr, rank(4));
  const Plan b16 =
      plan(m, with_weights(DType::bf16), Policy{}, std::nullopt, 256, nullptr, rank(4));
  uint64_t saved = 0;
  for (TensorId id : b16.frozen) {
    const Tensor& t = b16.tensors.at(std::size_t(id)).tensor;
    REQUIRE(b16.tensors.at(std::size_t(id)).bytes == t.bytes());
    if (t.shape.size() >= 2) saved += uint64_t(t.elements()) * 2;
  }
  REQUIRE(saved > 0);
  // Alignment may round each tensor's place; the saving is at least the bytes less the padding.
  REQUIRE(f32.persistent_bytes - b16.persistent_bytes >= saved - 256 * b16.frozen.size());
  REQUIRE(f32.persistent_bytes - b16.persistent_bytes <= saved + 256 * b16.frozen.size());
}

}  // namespace remat
