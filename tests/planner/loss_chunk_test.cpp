// choose_loss_chunk: the whole logits when they fit, else the largest chunk that fits, for full
// fine-tuning or LoRA.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "planner/loss_chunk.h"
#include "planner/plan.h"

using namespace remat;

namespace {

uint64_t minimum(const ModelConfig& m, TrainShape s, int chunk, const LoraSpec& lora = {}) {
  s.loss_chunk = chunk;
  return minimum_arena_bytes(m, s, 256, nullptr, lora);
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

TEST_CASE("choose_loss_chunk plans the LoRA graph when given LoRA") {
  const ModelConfig m = ModelConfig::preset("gpt2");
  const TrainShape s{4, 64, 0.0f, DType::f32, 0};
  LoraSpec lora;
  lora.rank = 8;
  lora.targets = {"c_attn"};
  // Frozen projections drop their inputs: LoRA's chunks fit budgets where full fine-tuning's do
  // not.
  const uint64_t lora64 = minimum(m, s, 64, lora);
  REQUIRE(lora64 < minimum(m, s, 64));
  CHECK(choose_loss_chunk(m, s, lora64, 256, nullptr, lora) == 64);
  CHECK_THROWS_AS(choose_loss_chunk(m, s, lora64), std::invalid_argument);
  CHECK_THROWS_AS(choose_loss_chunk(m, s, lora64 - 1, 256, nullptr, lora), std::invalid_argument);
  CHECK(choose_loss_chunk(m, s, minimum(m, s, 0, lora), 256, nullptr, lora) == 0);
}

TEST_CASE("choose_loss_chunk keeps each chunk's logits within one storage-buffer binding") {
  // GPT-2's 256 rows of logits take 51.5 MB: whole logits fit any arena here, but not a 20 MB
  // binding, which holds 97 rows of 50257 floats: chunks of 64.
  const ModelConfig m = ModelConfig::preset("gpt2");
  const TrainShape s{4, 64, 0.0f, DType::f32, 0};
  const uint64_t everything = minimum(m, s, 0);
  CHECK(choose_loss_chunk(m, s, everything) == 0);
  CHECK(choose_loss_chunk(m, s, everything, 256, nullptr, {}, 20'000'000) == 64);
  CHECK(choose_loss_chunk(m, s, everything, 256, nullptr, {}, 40'000'000) == 192);
  CHECK(logits_fit_binding(m, s, 0, 60'000'000));
  CHECK_FALSE(logits_fit_binding(m, s, 0, 50'000'000));
  CHECK(logits_fit_binding(m, s, 0, 0));
  CHECK_THROWS_AS(choose_loss_chunk(m, s, everything, 256, nullptr, {}, 10'000'000),
                  std::invalid_argument);
}
