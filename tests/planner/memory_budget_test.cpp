// One budget for the whole session: on many generated models, shapes, LoRA settings and loss
// chunks, the plan under a memory budget M fits M (persistent + arena + extras), the reported
// minimum M0 plans while M0 - 1 is refused naming M0, and an arena cap given beside the budget is
// checked too.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "planner/memory_budget.h"
#include "planner/plan.h"
#include "planner/session_extras.h"

namespace remat {
namespace {

struct Case {
  ModelConfig model;
  TrainShape shape;
  LoraSpec lora;
  bool choose = false;
  std::string name;
};

// A small GPT-2 or Llama shape with random depth, width, batch and sequence; LoRA on half of
// them; the loss chunk chosen, fixed at 64 rows or whole.
Case random_case(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  const bool llama = pick(0, 1) == 1;
  c.model = ModelConfig::preset(llama ? "llama-tiny" : "tiny");
  c.model.layers = pick(1, 5);
  c.model.vocab = pick(1, 3) * 100 + pick(0, 99);
  if (llama) c.model.tied_head = pick(0, 1) == 1;
  c.shape.batch = pick(1, 4);
  c.shape.seq = 16 * pick(1, 4);
  if (pick(0, 1)) c.lora.rank = pick(1, 8);
  // A frozen head weight has no chunked backward yet, so LoRA keeps the whole logits.
  const bool chunkable = !c.lora.enabled();
  const int mode = chunkable ? pick(0, 2) : pick(0, 1) * 2;
  c.choose = mode == 0;
  c.shape.loss_chunk = mode == 1 ? 64 : 0;
  c.name = std::string(llama ? "llama" : "gpt2") + " L" + std::to_string(c.model.layers) + " V" +
           std::to_string(c.model.vocab) + (llama && !c.model.tied_head ? " untied" : "") + " B" +
           std::to_string(c.shape.batch) + " T" + std::to_string(c.shape.seq) + " lora " +
           std::to_string(c.lora.rank) +
           (c.choose ? " chunk chosen" : " chunk " + std::to_string(c.shape.loss_chunk));
  return c;
}

MemoryRequest request(const Case& c, uint64_t budget) {
  MemoryRequest r;
  r.memory_budget = budget;
  r.choose_loss_chunk = c.choose;
  return r;
}

}  // namespace

TEST_CASE("memory budget: plans fit M, the minimum plans and one byte less names it") {
  std::mt19937 rng(20261123);
  for (int i = 0; i < 60; ++i) {
    const Case c = random_case(rng);
    INFO(c.name);
    const SessionMemory least = minimum_memory(c.model, c.shape, c.lora, request(c, 0));
    const uint64_t m0 = least.total();
    const MemoryPlan at = plan_memory(c.model, c.shape, c.lora, request(c, m0));
    CHECK(at.memory.total() <= m0);
    CHECK(at.memory.total() == at.plan.persistent_bytes + at.plan.arena_bytes +
                                   session_extras(at.plan, kSmallestBindingLimit).total());
    try {
      plan_memory(c.model, c.shape, c.lora, request(c, m0 - 1));
      FAIL("one byte below the minimum planned");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find("smallest plan's total of") != std::string::npos);
      CHECK(what.find("(" + std::to_string(m0) + " bytes)") != std::string::npos);
      CHECK(what.find('\n') == std::string::npos);
    }
    // Larger budgets fit too, and never plan slower than the minimum's plan.
    const uint64_t m = m0 + std::uniform_int_distribution<uint64_t>(0, 2 * least.arena_bytes)(rng);
    const MemoryPlan more = plan_memory(c.model, c.shape, c.lora, request(c, m));
    CHECK(more.memory.total() <= m);
    CHECK(more.plan.report.predicted_seconds <= at.plan.report.predicted_seconds * (1 + 1e-9));
    if (!c.choose) CHECK(more.shape.loss_chunk == c.shape.loss_chunk);
  }
}

TEST_CASE("memory budget: the parts sum to the persistent buffer, arena and extras") {
  const ModelConfig m = ModelConfig::preset("tiny");
  TrainShape s;
  s.batch = 2;
  s.seq = 32;
  LoraSpec lora;
  lora.rank = 4;
  const Plan p = plan(m, s, Policy{}, std::nullopt, 256, nullptr, lora);
  const SessionMemory parts = session_memory(p, 0, kSmallestBindingLimit);
  CHECK(parts.frozen_bytes > 0);
  CHECK(parts.frozen_dtype == "f32");
  CHECK(parts.persistent_bytes() == p.persistent_bytes);
  CHECK(parts.total() == p.persistent_bytes + p.arena_bytes + parts.extras.total());
  // io staging holds tokens and targets (u32) in, losses (f32) and the two-float norm out.
  CHECK(parts.extras.io_staging == 3 * uint64_t(s.batch * s.seq) * 4 + 8);
  CHECK(parts.extras.adamw_hyper == 44);

  // A bf16 base: the matrices at 2 bytes, the 1-D gains and biases still f32, and the too-small
  // message no longer suggests --weights-dtype while the f32 one does.
  TrainShape half = s;
  half.weight_dtype = DType::bf16;
  const Plan hp = plan(m, half, Policy{}, std::nullopt, 256, nullptr, lora);
  const SessionMemory hparts = session_memory(hp, 0, kSmallestBindingLimit);
  CHECK(hparts.frozen_dtype == "bf16, 1-D f32");
  CHECK(hparts.frozen_bytes < parts.frozen_bytes);
  CHECK(hparts.frozen_bytes > parts.frozen_bytes / 2);
  MemoryRequest tiny_budget;
  tiny_budget.memory_budget = 1;
  CHECK_THROWS_WITH(plan_memory(m, s, lora, tiny_budget), Catch::Contains("--weights-dtype bf16"));
  CHECK_THROWS_WITH(plan_memory(m, half, lora, tiny_budget),
                    !Catch::Contains("--weights-dtype") && Catch::Contains("(bf16, 1-D f32)"));
}

TEST_CASE("memory budget: a fixed policy's total is checked, and an arena cap beside it") {
  const ModelConfig m = ModelConfig::preset("tiny");
  TrainShape s;
  s.batch = 2;
  s.seq = 64;
  MemoryRequest r;
  r.policy = Policy::parse("every:2");
  const SessionMemory fixed = minimum_memory(m, s, {}, r);
  const Plan every2 = plan(m, s, r.policy);
  CHECK(fixed.arena_bytes == every2.arena_bytes);
  r.memory_budget = fixed.total();
  CHECK(plan_memory(m, s, {}, r).plan.arena_bytes == every2.arena_bytes);
  r.memory_budget = fixed.total() - 1;
  CHECK_THROWS_WITH(plan_memory(m, s, {}, r),
                    Catch::Contains(std::to_string(fixed.total()) + " bytes"));

  // auto under a generous memory budget, with an arena cap below the smallest arena: the
  // arena's own error; at the smallest arena it plans within both.
  MemoryRequest a;
  a.memory_budget = fixed.total() * 2;
  const uint64_t least_arena = minimum_arena_bytes(m, s);
  a.arena_budget = least_arena - 1;
  CHECK_THROWS_WITH(plan_memory(m, s, {}, a), Catch::Contains("arena budget"));
  a.arena_budget = least_arena;
  const MemoryPlan both = plan_memory(m, s, {}, a);
  CHECK(both.plan.arena_bytes <= least_arena);
  CHECK(both.memory.total() <= a.memory_budget);
}

TEST_CASE("memory budget: the gradient norm's partial sums follow the binding limit") {
  // 40M floats: one piece with no limit (1024 slots), two under 128 MiB (2 x 1024).
  const std::vector<uint64_t> counts = {40'000'000, 100};
  CHECK(grad_norm_partial_floats(counts, 0) == 1024 + 64);
  CHECK(grad_norm_partial_floats(counts, kSmallestBindingLimit) == 2 * 1024 + 64);
}

}  // namespace remat
