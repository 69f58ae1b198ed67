// `auto` against the fixed policies, all laid out exactly: at every budget auto's arena fits and
// its predicted time is at most that of every uniform (none, every:K, sqrt) or selective plan
// whose own arena fits the same budget. Budgets are each fixed plan's exact arena, one byte
// less, and the points between; graphs with whole or chunked logits, with and without LoRA, with
// 32- or 16-bit weights and activations, and random chains.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/model_builder.h"
#include "planner/auto_search.h"
#include "planner/plan.h"
#include "tests/planner/random_chain.h"

namespace remat {
namespace {

struct FixedPlan {
  std::string policy;
  uint64_t arena = 0;
  double seconds = 0;
};

std::vector<FixedPlan> fixed_plans(const Graph& g, uint64_t alignment) {
  std::vector<std::string> names = {"none", "selective", "sqrt"};
  for (int k = 1; k <= static_cast<int>(g.blocks.size()) - 2; ++k)
    names.push_back("every:" + std::to_string(k));
  std::vector<FixedPlan> out;
  for (const std::string& name : names) {
    const Plan p = plan_graph(g, {Policy::parse(name), std::nullopt, alignment, nullptr});
    out.push_back({name, p.arena_bytes, p.report.predicted_seconds});
  }
  return out;
}

// The budgets: auto's minimum, every fixed plan's arena, one byte below each, the midpoints
// between consecutive ones, and a tenth above the largest.
std::vector<uint64_t> budgets_around(const std::vector<FixedPlan>& fixed, uint64_t minimum) {
  std::vector<uint64_t> marks = {minimum};
  for (const FixedPlan& f : fixed) marks.push_back(f.arena);
  std::sort(marks.begin(), marks.end());
  marks.erase(std::unique(marks.begin(), marks.end()), marks.end());
  std::vector<uint64_t> out;
  for (size_t i = 0; i < marks.size(); ++i) {
    out.insert(out.end(), {marks[i], marks[i] - 1});
    if (i + 1 < marks.size()) out.push_back(marks[i] + (marks[i + 1] - marks[i]) / 2);
  }
  out.push_back(marks.back() + marks.back() / 10);
  return out;
}

// Returns how many (budget, fixed plan) pairs were compared.
int require_never_worse(const Graph& g, uint64_t alignment) {
  const std::vector<FixedPlan> fixed = fixed_plans(g, alignment);
  const AutoPlanner planner(g,
                            {Policy{Policy::Kind::automatic, 0}, std::nullopt, alignment, nullptr});
  const uint64_t minimum = planner.minimum_arena();
  REQUIRE_THROWS_AS(planner.plan(minimum - 1), std::invalid_argument);
  int compared = 0;
  for (uint64_t budget : budgets_around(fixed, minimum)) {
    if (budget < minimum) continue;
    INFO("budget " << budget);
    const Plan p = planner.plan(budget);
    REQUIRE(p.arena_bytes <= budget);
    for (const FixedPlan& f : fixed) {
      if (f.arena > budget) continue;
      INFO(f.policy << ": arena " << f.arena << ", " << f.seconds << " s; auto: arena "
                    << p.arena_bytes << ", " << p.report.predicted_seconds << " s");
      REQUIRE(p.report.predicted_seconds <= f.seconds);
      ++compared;
    }
  }
  return compared;
}

struct Config {
  const char* label;
  ModelConfig model;
  TrainShape shape;
  LoraSpec lora;
};

ModelConfig with_layers(const char* preset, int layers) {
  ModelConfig m = ModelConfig::preset(preset);
  m.layers = layers;
  return m;
}

LoraSpec rank(int r) {
  LoraSpec l;
  l.rank = r;
  return l;
}

TrainShape shape(int batch, int seq, int loss_chunk, DType activations, DType weights) {
  TrainShape s;
  s.batch = batch;
  s.seq = seq;
  s.loss_chunk = loss_chunk;
  s.activation_dtype = activations;
  s.weight_dtype = weights;
  return s;
}

}  // namespace

TEST_CASE("planner: auto at every:1's own arena is as fast as every:1 (gpt2, T=1024, B=4)") {
  const ModelConfig gpt2 = ModelConfig::preset("gpt2");
  TrainShape s;
  s.batch = 4;
  s.seq = 1024;
  const Plan every1 = plan(gpt2, s, Policy::parse("every:1"));
  REQUIRE(every1.arena_bytes == 1823014912);
  const Plan at = plan(gpt2, s, Policy::parse("auto"), every1.arena_bytes);
  INFO("auto " << at.report.predicted_step_ratio << "x, every:1 "
               << every1.report.predicted_step_ratio << "x");
  CHECK(at.arena_bytes <= every1.arena_bytes);
  CHECK(at.report.predicted_seconds <= every1.report.predicted_seconds);
  CHECK(require_never_worse(build_training_model(gpt2, s), 256) > 0);
}

TEST_CASE("planner: auto is never slower than a fixed policy that fits the same budget") {
  const DType f32 = DType::f32, bf16 = DType::bf16, f16 = DType::f16;
  const Config configs[] = {
      {"gpt 8 layers", with_layers("tiny", 8), shape(4, 64, 0, f32, f32), {}},
      {"gpt 8 layers, chunked loss", with_layers("tiny", 8), shape(4, 64, 64, f32, f32), {}},
      {"gpt 8 layers, LoRA", with_layers("tiny", 8), shape(4, 64, 0, f32, f32), rank(4)},
      {"gpt 8 layers, LoRA, chunked, bf16", with_layers("tiny", 8), shape(4, 64, 64, bf16, bf16),
       rank(4)},
      {"gpt 8 layers, f16 activations", with_layers("tiny", 8), shape(2, 64, 0, f16, f32), {}},
      {"llama 6 layers", with_layers("llama-tiny", 6), shape(2, 64, 0, f32, f32), {}},
      {"llama 6 layers, chunked, LoRA, f16", with_layers("llama-tiny", 6),
       shape(2, 64, 64, f16, f16), rank(8)},
      {"llama 6 layers, LoRA, bf16 weights", with_layers("llama-tiny", 6),
       shape(2, 48, 0, f32, bf16), rank(2)},
      {"gpt2, chunked loss, LoRA, bf16", ModelConfig::preset("gpt2"), shape(1, 128, 64, bf16, bf16),
       rank(8)},
  };
  for (const Config& c : configs) {
    INFO(c.label);
    const Graph g = build_training_model(c.model, c.shape, c.lora);
    CHECK(require_never_worse(g, 256) > 0);
  }
}

TEST_CASE("planner: auto is never slower than a fixed policy on random chains") {
  for (uint32_t seed = 400; seed < 410; ++seed) {
    const bool lora = seed % 2 == 1;
    INFO("seed " << seed << (lora ? " with LoRA" : ""));
    const Graph g = testing::random_training_chain(seed, 3, 10, lora);
    CHECK(require_never_worse(g, seed % 3 ? 256u : 64u) > 0);
  }
}

}  // namespace remat
