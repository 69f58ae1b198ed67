// plan_session: the plan every session makes, with the loss chunk chosen when the caller leaves
// it to the planner (without a budget, under an arena cap, under a whole-memory cap) and kept when
// given.
#include <catch2/catch.hpp>

#include <optional>

#include "planner/memory_budget.h"
#include "planner/plan.h"
#include "planner/session_plan.h"

using namespace remat;

namespace {

// tiny with GPT-2's vocabulary at B = 4, T = 256: [1024, 50257] f32 logits, 205.9 MB, above
// the 128 MiB binding every Vulkan device offers.
ModelConfig model() {
  ModelConfig m = ModelConfig::preset("tiny");
  m.vocab = 50257;
  m.ctx = 256;
  return m;
}

TrainShape shape(int seq = 256, int loss_chunk = 0) {
  TrainShape s{4, seq, 0.0f, DType::f32, 0};
  s.loss_chunk = loss_chunk;
  return s;
}

SessionPlanRequest choosing(Policy policy = Policy{}) {
  SessionPlanRequest r;
  r.policy = policy;
  r.choose_loss_chunk = true;
  return r;
}

}  // namespace

TEST_CASE("plan_session without a budget chunks logits that one binding cannot hold") {
  const SessionPlan p = plan_session(model(), shape(), {}, choosing());
  CHECK(p.shape.loss_chunk == 640);
  const Plan explicit640 = plan(model(), shape(256, 640), Policy{});
  CHECK(p.plan.arena_bytes == explicit640.arena_bytes);
  CHECK(p.plan.steps.size() == explicit640.steps.size());
  // A device without the limit keeps them whole, as a chunk given (0 included) is kept.
  SessionPlanRequest unlimited = choosing();
  unlimited.max_binding_bytes = 0;
  CHECK(plan_session(model(), shape(), {}, unlimited).shape.loss_chunk == 0);
  SessionPlanRequest given = choosing();
  given.choose_loss_chunk = false;
  CHECK(plan_session(model(), shape(), {}, given).shape.loss_chunk == 0);
  CHECK(plan_session(model(), shape(256, 128), {}, given).shape.loss_chunk == 128);
}

TEST_CASE("plan_session keeps the whole logits, and today's plan, where they bind") {
  const SessionPlan p = plan_session(model(), shape(64), {}, choosing());
  CHECK(p.shape.loss_chunk == 0);
  const Plan whole = plan(model(), shape(64), Policy{});
  CHECK(p.plan.arena_bytes == whole.arena_bytes);
  CHECK(p.plan.steps.size() == whole.steps.size());
}

TEST_CASE("plan_session under an arena cap: auto chooses for it, a fixed policy for the binding") {
  const Policy automatic{Policy::Kind::automatic, 0};
  TrainShape at128 = shape(256, 128);
  const uint64_t budget = minimum_arena_bytes(model(), at128);
  SessionPlanRequest r = choosing(automatic);
  r.arena_budget = budget;
  const SessionPlan p = plan_session(model(), shape(), {}, r);
  CHECK(p.shape.loss_chunk == 128);
  CHECK(p.plan.arena_bytes <= budget);
  // every:1 is checked against the cap, not planned into it: the chunk is the binding's.
  SessionPlanRequest fixed = choosing(Policy{Policy::Kind::every, 1});
  fixed.arena_budget = uint64_t(1) << 40;
  CHECK(session_loss_chunk(model(), shape(), {}, fixed) == 640);
}

TEST_CASE("plan_session under a memory cap chooses as the memory planner does") {
  const Policy automatic{Policy::Kind::automatic, 0};
  MemoryRequest m;
  m.memory_budget = uint64_t(1) << 30;
  m.choose_loss_chunk = true;
  const MemoryPlan expected = plan_memory(model(), shape(), {}, m);
  SessionPlanRequest r = choosing(automatic);
  r.memory_budget = m.memory_budget;
  const SessionPlan p = plan_session(model(), shape(), {}, r);
  CHECK(p.shape.loss_chunk == expected.shape.loss_chunk);
  CHECK(p.shape.loss_chunk > 0);
  CHECK(p.shape.loss_chunk <= 640);
  CHECK(p.plan.arena_bytes == expected.plan.arena_bytes);
}
