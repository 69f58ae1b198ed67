// Plans of chunked-loss graphs (graph/lm_head.h): the checker accepts every policy on both
// families, with the head trained or frozen (LoRA), the backward order does not depend on the
// policy, and the minimum arena drops by about the logits and their gradient.
#include <catch2/catch.hpp>

#include <vector>

#include "graph/model_builder.h"
#include "planner/auto_search.h"
#include "planner/plan.h"
#include "planner/verify.h"

using namespace remat;

namespace {

std::vector<int> backward_sources(const Plan& p) {
  std::vector<int> out;
  for (const Step& s : p.steps)
    if (s.phase == Phase::backward) out.push_back(s.source_op);
  return out;
}

void check_policies_sound(const ModelConfig& m, const TrainShape& s, const LoraSpec& lora = {}) {
  const Graph g = build_training_model(m, s, lora);
  std::vector<int> reference;
  for (const char* name : {"none", "every:1", "every:2", "sqrt", "selective"}) {
    INFO(m.name() << " policy " << name);
    const Plan p = plan_graph(g, {Policy::parse(name), std::nullopt, 256, nullptr});
    const auto problems = verify_plan(g, p);
    for (const auto& line : problems) UNSCOPED_INFO(line);
    REQUIRE(problems.empty());
    if (reference.empty()) reference = backward_sources(p);
    CHECK(backward_sources(p) == reference);
  }
  const AutoPlanner planner(g, {Policy{Policy::Kind::automatic, 0}, std::nullopt, 256, nullptr});
  const Plan p = planner.plan(planner.minimum_arena());
  CHECK(verify_plan(g, p).empty());
}

}  // namespace

TEST_CASE("chunked loss: every policy passes the checker on both families") {
  // B*T = 69: chunks of 64 and 5 rows.
  const TrainShape s{3, 23, 0.0f, DType::f32, 64};
  ModelConfig gpt = ModelConfig::preset("tiny");
  check_policies_sound(gpt, s);
  ModelConfig llama = ModelConfig::preset("llama-tiny");
  check_policies_sound(llama, s);
  llama.tied_head = false;
  check_policies_sound(llama, s);
}

TEST_CASE("chunked loss with a frozen head (LoRA): every policy passes the checker") {
  const TrainShape s{3, 23, 0.0f, DType::f32, 64};
  LoraSpec lora;
  lora.rank = 4;
  check_policies_sound(ModelConfig::preset("tiny"), s, lora);
  ModelConfig llama = ModelConfig::preset("llama-tiny");
  check_policies_sound(llama, s, lora);
  llama.tied_head = false;
  check_policies_sound(llama, s, lora);
}

TEST_CASE("chunked loss with a frozen head (LoRA): no weight gradient, a smaller arena") {
  const ModelConfig m = ModelConfig::preset("gpt2");
  LoraSpec lora;
  lora.rank = 8;
  TrainShape s{4, 64, 0.0f, DType::f32, 0};
  const Plan whole = plan(m, s, Policy::parse("every:1"), std::nullopt, 256, nullptr, lora);
  s.loss_chunk = 64;
  const Plan chunked = plan(m, s, Policy::parse("every:1"), std::nullopt, 256, nullptr, lora);
  // Persistent memory holds the frozen model, the adapters and their gradients and moments: the
  // same with or without chunks (a dW of wte would add 147 MiB).
  CHECK(chunked.persistent_bytes == whole.persistent_bytes);
  const uint64_t logits = uint64_t{4} * 64 * 50257 * 4;
  INFO("whole " << whole.arena_bytes << " chunked " << chunked.arena_bytes);
  CHECK(chunked.arena_bytes + logits < whole.arena_bytes);
  // With c_attn alone adapted, frozen projections drop their inputs: a smaller minimum still.
  lora.targets = {"c_attn"};
  CHECK(minimum_arena_bytes(m, s, 256, nullptr, lora) < minimum_arena_bytes(m, s));
}

TEST_CASE("chunked loss: the minimum arena drops by about the logits and their gradient") {
  const ModelConfig m = ModelConfig::preset("gpt2");
  TrainShape s{4, 64, 0.0f, DType::f32, 0};
  const uint64_t whole = minimum_arena_bytes(m, s);
  s.loss_chunk = 64;
  const uint64_t chunked = minimum_arena_bytes(m, s);
  const uint64_t logits = uint64_t{4} * 64 * 50257 * 4;
  INFO("whole " << whole << " chunked " << chunked);
  // Today's minimum holds logits and dlogits at once; the chunked one holds one chunk's.
  CHECK(chunked + logits < whole);
  CHECK(chunked < whole / 4);
  s.loss_chunk = 128;
  CHECK(minimum_arena_bytes(m, s) > chunked);
}
