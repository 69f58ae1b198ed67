// choose_loss_chunk: the whole logits when they fit, else the largest chunk that fits, for full
// fine-tuning or LoRA; binding_loss_chunk and default_loss_chunk, the same rule without a budget.
#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>

#include "planner/loss_chunk.h"
#include "planner/plan.h"
#include "planner/session_extras.h"

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

TEST_CASE("binding_loss_chunk keeps the whole logits where one binding holds them") {
  // tiny with GPT-2's vocabulary, B = 4, T = 64: 256 rows of 50257 floats, 51.5 MB.
  ModelConfig m = ModelConfig::preset("tiny");
  m.vocab = 50257;
  const TrainShape s{4, 64, 0.0f, DType::f32, 0};
  CHECK(binding_loss_chunk(m, s, kSmallestBindingLimit) == 0);
  CHECK(binding_loss_chunk(m, s, 256ull * 50257 * 4) == 0);  // exactly the logits
  CHECK(binding_loss_chunk(m, s, 0) == 0);                   // no limit
}

TEST_CASE("binding_loss_chunk takes the largest multiple of 64 rows one binding holds") {
  // B = 4, T = 256 of GPT-2's vocabulary: 1024 rows, 205.9 MB, above Vulkan's smallest limit of
  // 128 MiB, which holds 667 rows: chunks of 640.
  ModelConfig m = ModelConfig::preset("tiny");
  m.vocab = 50257;
  m.ctx = 256;
  const TrainShape s{4, 256, 0.0f, DType::f32, 0};
  REQUIRE_FALSE(logits_fit_binding(m, s, 0, kSmallestBindingLimit));
  CHECK(binding_loss_chunk(m, s, kSmallestBindingLimit) == 640);
  CHECK(logits_fit_binding(m, s, 640, kSmallestBindingLimit));
  CHECK_FALSE(logits_fit_binding(m, s, 704, kSmallestBindingLimit));
  // One byte short of 128 rows is 64; exactly 128 rows is 128.
  CHECK(binding_loss_chunk(m, s, 128ull * 50257 * 4 - 1) == 64);
  CHECK(binding_loss_chunk(m, s, 128ull * 50257 * 4) == 128);
  // Below 64 rows there is no chunk to bind: refused, naming the vocabulary.
  try {
    binding_loss_chunk(m, s, 64ull * 50257 * 4 - 1);
    FAIL("no refusal");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("vocabulary of 50257") != std::string::npos);
  }
}

TEST_CASE("default_loss_chunk: the binding rule without a budget, choose_loss_chunk with one") {
  ModelConfig m = ModelConfig::preset("tiny");
  m.vocab = 50257;
  m.ctx = 256;
  const TrainShape s{4, 256, 0.0f, DType::f32, 0};
  const uint64_t limit = kSmallestBindingLimit;
  CHECK(default_loss_chunk(m, s, {}, std::nullopt, 256, nullptr, limit) == 640);
  // An arena that holds the whole logits' smallest plan still binds at most 640 rows.
  const uint64_t whole = minimum(m, s, 0);
  CHECK(default_loss_chunk(m, s, {}, whole, 256, nullptr, limit) == 640);
  CHECK(default_loss_chunk(m, s, {}, whole, 256, nullptr, 0) == 0);
  // A tighter arena takes a smaller chunk than the binding would: the budget decides.
  const uint64_t at128 = minimum(m, s, 128);
  REQUIRE(at128 < minimum(m, s, 192));
  CHECK(default_loss_chunk(m, s, {}, at128, 256, nullptr, limit) == 128);
  CHECK_THROWS_AS(default_loss_chunk(m, s, {}, minimum(m, s, 64) - 1, 256, nullptr, limit),
                  std::invalid_argument);
  // Logits that bind: the whole logits, whose smallest plan fits.
  const TrainShape small{4, 64, 0.0f, DType::f32, 0};
  CHECK(default_loss_chunk(m, small, {}, std::nullopt, 256, nullptr, limit) == 0);
  CHECK(default_loss_chunk(m, small, {}, minimum(m, small, 0), 256, nullptr, limit) == 0);
}
