// Training with the persistent buffer and the arena split over many device allocations, forced
// on small models by SessionConfig::max_allocation_bytes as a 1B model's weights force it on a
// real device: losses, gradient norms and weights bit-identical to the session in one allocation
// each, for GPT-2 and Llama shapes, full fine-tuning and LoRA, with exactly the planned bytes
// allocated.
#include <catch2/catch.hpp>

#include "tests/training/steps_run.h"

using namespace remat;

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

SessionConfig gpt(int vocab, int lora_rank) {
  SessionConfig c;
  c.model = ModelConfig{4, 128, 4, vocab, 64};  // the tiny preset with a wider vocabulary
  c.shape.batch = 2;
  c.shape.seq = 64;
  c.optimizer.lr = 1e-3;
  c.optimizer.weight_decay = 0.1;
  c.seed = 11;
  c.lora.rank = lora_rank;
  return c;
}

SessionConfig llama(int lora_rank) {
  SessionConfig c = gpt(256, lora_rank);
  c.model = ModelConfig::preset("llama-tiny");
  return c;
}

struct PagedRun {
  test::StepsRun steps;
  std::size_t persistent_allocations = 0;
  std::size_t arena_allocations = 0;
};

PagedRun train(SessionConfig c, uint64_t max_allocation_bytes) {
  c.max_allocation_bytes = max_allocation_bytes;
  Session s(test::device(), c);
  PagedRun r;
  r.persistent_allocations = s.plan().persistent_allocations.size();
  r.arena_allocations = s.plan().arena_allocations.size();
  const std::size_t n = std::size_t(c.shape.batch) * c.shape.seq;
  for (uint32_t step = 0; step < 3; ++step) {
    const auto tokens = test::random_indices(n, 500 + step, uint32_t(c.model.vocab));
    const auto targets = test::random_indices(n, 600 + step, uint32_t(c.model.vocab));
    r.steps.losses.push_back(s.step(tokens, targets));
    r.steps.norms.push_back(s.last_grad_norm());
  }
  r.steps.weights = s.parameters();
  r.steps.memory = s.memory();
  return r;
}

// The clamped session splits both buffers (the check is not vacuous), allocates exactly what it
// planned, and trains to the bits of the session that holds each buffer in one allocation.
void require_same_as_unclamped(const SessionConfig& c, uint64_t limit) {
  const PagedRun whole = train(c, 0);
  const PagedRun paged = train(c, limit);
  REQUIRE(whole.persistent_allocations == 1);
  REQUIRE(whole.arena_allocations == 1);
  REQUIRE(paged.persistent_allocations > 1);
  REQUIRE(paged.arena_allocations > 1);
  CHECK(paged.steps.memory.device_bytes_allocated == paged.steps.memory.planned_total_bytes);
  test::require_same_steps(paged.steps, whole.steps);
}

}  // namespace

TEST_CASE("GPT-2 trains bit-identically with its buffers in 8 MiB allocations") {
  // Persistent ~30 MB (a 4 MiB embedding), the arena with two 4 MiB logits tensors.
  require_same_as_unclamped(gpt(8192, 0), 8 * kMiB);
}

TEST_CASE("GPT-2 LoRA trains bit-identically with its buffers in 1 MiB allocations") {
  require_same_as_unclamped(gpt(2048, 4), kMiB);
}

TEST_CASE("llama-tiny trains bit-identically with its buffers in 1 MiB allocations") {
  require_same_as_unclamped(llama(0), kMiB);
}

TEST_CASE("llama-tiny LoRA trains bit-identically with its buffers in 1 MiB allocations") {
  require_same_as_unclamped(llama(4), kMiB);
}

TEST_CASE("a tensor larger than the clamped allocation is refused before anything is allocated") {
  // GPT-2's 8192 x 128 embedding is 4 MiB.
  const uint64_t before = test::device().ledger().stats().total_live_bytes;
  REQUIRE_THROWS_WITH(
      train(gpt(8192, 0), 2 * kMiB),
      Catch::Contains("'wte.weight'") && Catch::Contains("maxMemoryAllocationSize"));
  REQUIRE(test::device().ledger().stats().total_live_bytes == before);
}
