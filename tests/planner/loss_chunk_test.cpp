// choose_loss_chunk: the whole logits when they fit, else the largest chunk that fits.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "planner/loss_chunk.h"
#include "planner/plan.h"

using namespace remat;

namespace {

uint64_t minimum(const ModelConfig& m, TrainShape s, int chunk) {
  s.loss_chunk = chunk;
  return minimum_arena_bytes(m, s);
}

}  // namespace

TEST_CASE("choose_loss_chunk keeps the whole logits where they fit") {
  const ModelConfig m = ModelConfig::preset("tiny");
  const TrainShape s{4, 64, 0.0f, DType::f32, 0};
  CHECK(choose_loss_chunk(m, s, minimum(m, s, 0)) == 0);
}

TEST_CASE("choose_loss_chunk picks the largest chunk whose smallest plan fits") {
  const ModelConfig m = ModelConfig::preset("gpt2");
  const TrainShape s{4, 64, 0.0f, DType::f32, 0};
  const uint64_t at128 = minimum(m, s, 128);
  REQUIRE(at128 < minimum(m, s, 192));
  CHECK(choose_loss_chunk(m, s, at128) == 128);
  CHECK(choose_loss_chunk(m, s, minimum(m, s, 192) - 1) == 128);
  CHECK(choose_loss_chunk(m, s, minimum(m, s, 0) - 1) >= 192);
  CHECK(choose_loss_chunk(m, s, minimum(m, s, 64)) == 64);
  CHECK_THROWS_AS(choose_loss_chunk(m, s, minimum(m, s, 64) - 1), std::invalid_argument);
}
