// Plans of LoRA graphs: every policy (auto included) passes the checker on random chains with
// random adapters, frozen weights cost no gradient or moment bytes, and activations that only a
// frozen weight's gradient would read are not kept.
#include <catch2/catch.hpp>

#include "graph/autodiff.h"
#include "graph/model_builder.h"
#include "planner/auto_search.h"
#include "planner/block_costs.h"
#include "planner/layer_memory.h"
#include "planner/plan.h"
#include "planner/verify.h"
#include "tests/planner/random_chain.h"

namespace remat {
namespace {

void require_sound(const Graph& g, const Plan& p) {
  const auto problems = verify_plan(g, p);
  for (const auto& line : problems) UNSCOPED_INFO(line);
  REQUIRE(problems.empty());
}

std::vector<int> backward_sources(const Plan& p) {
  std::vector<int> out;
  for (const Step& s : p.steps)
    if (s.phase == Phase::backward) out.push_back(s.source_op);
  return out;
}

ModelConfig gpt_small() {
  ModelConfig m = ModelConfig::preset("tiny");
  m.layers = 3;
  return m;
}

}  // namespace

TEST_CASE("lora plans: every policy is sound on random chains with random adapters") {
  const char* policies[] = {"none", "every:1", "every:2", "every:3", "sqrt", "selective"};
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const Graph g = testing::random_training_chain(seed, 1, 7, true);
    REQUIRE_FALSE(g.adapters.empty());
    std::vector<int> reference;
    for (const char* name : policies) {
      INFO("seed " << seed << " policy " << name);
      const Plan p = plan_graph(g, {Policy::parse(name), std::nullopt, 64, nullptr});
      require_sound(g, p);
      if (reference.empty()) reference = backward_sources(p);
      REQUIRE(backward_sources(p) == reference);
    }
    INFO("seed " << seed << " auto");
    const AutoPlanner auto_planner(g, {Policy::parse("auto"), std::nullopt, 64, nullptr});
    const uint64_t minimum = auto_planner.minimum_arena();
    const uint64_t all =
        plan_graph(g, {Policy::parse("none"), std::nullopt, 64, nullptr}).arena_bytes;
    for (uint64_t budget : {minimum, (minimum + all) / 2, all}) {
      const Plan p = auto_planner.plan(budget);
      CHECK(p.arena_bytes <= budget);
      require_sound(g, p);
      REQUIRE(backward_sources(p) == reference);
    }
  }
}

TEST_CASE("lora plans: frozen weights are persistent without gradients or moments") {
  LoraSpec spec;
  spec.rank = 8;
  const Plan full = plan(gpt_small(), TrainShape{}, Policy{});
  const Plan lora = plan(gpt_small(), TrainShape{}, Policy{}, std::nullopt, 256, nullptr, spec);
  CHECK(lora.frozen.size() == full.parameters.size());
  CHECK(lora.report.parameter_bytes > full.report.parameter_bytes);  // base + adapters
  CHECK(lora.report.grad_bytes < full.report.grad_bytes / 10);
  CHECK(lora.report.adam_bytes == 2 * lora.report.grad_bytes);
  CHECK(lora.persistent_bytes < full.persistent_bytes / 2);
  for (TensorId t : lora.frozen) {
    CHECK(lora.tensors[static_cast<size_t>(t)].placement == Placement::persistent);
    CHECK(lora.tensors[static_cast<size_t>(t)].offset +
              lora.tensors[static_cast<size_t>(t)].bytes <=
          lora.persistent_bytes);
  }
}

TEST_CASE("lora plans: the GELU output is kept only when mlp.c_proj is trained") {
  const auto saved = [](const LoraSpec& spec) {
    const Graph g = build_training_gpt(gpt_small(), TrainShape{}, spec);
    return block_costs(g, 256, CostModel{}).blocks[1].keep[level_index(KeepLevel::all)];
  };
  const TrainShape shape;
  const uint64_t gelu = static_cast<uint64_t>(shape.batch) * shape.seq * 4 * gpt_small().dim * 4;
  LoraSpec all;
  all.rank = 4;
  LoraSpec no_fc_proj = all;
  no_fc_proj.targets = {"attn.c_attn", "attn.c_proj", "mlp.c_fc"};
  // Without mlp.c_proj's adapter nothing reads the GELU output in the backward: its bytes go.
  CHECK(saved(all) - saved(no_fc_proj) >= gelu);
  // Full fine-tuning keeps the GELU output for mlp.c_proj's weight gradient.
  const uint64_t full = block_costs(build_training_gpt(gpt_small(), shape), 256, CostModel{})
                            .blocks[1]
                            .keep[level_index(KeepLevel::all)];
  CHECK(full > saved(no_fc_proj));
}

}  // namespace remat

namespace remat {

TEST_CASE("lora plans: per-layer bytes name what frozen weights' dx-only backward saves") {
  const TrainShape shape;
  const uint64_t gelu = static_cast<uint64_t>(shape.batch) * shape.seq * 4 * gpt_small().dim * 4;
  const Graph full = build_training_gpt(gpt_small(), shape);
  const LayerActivationBytes f = layer_activation_bytes(full, 2, 256);
  CHECK(f.frozen_weight_inputs == 0);
  CHECK(f.saved == block_costs(full, 256, CostModel{}).blocks[2].keep[level_index(KeepLevel::all)]);
  LoraSpec attn;
  attn.rank = 4;
  attn.targets = {"c_attn"};
  const Graph g = build_training_gpt(gpt_small(), shape, attn);
  const LayerActivationBytes l = layer_activation_bytes(g, 2, 256);
  CHECK(l.saved == block_costs(g, 256, CostModel{}).blocks[2].keep[level_index(KeepLevel::all)]);
  // attn.out, ln_2.out and the GELU output are read only by frozen weights' gradients.
  CHECK(l.frozen_weight_inputs >= gelu);
  CHECK(l.saved < f.saved);
  LoraSpec all;
  all.rank = 4;  // every matmul's input is read by its adapter's A gradient anyway
  CHECK(layer_activation_bytes(build_training_gpt(gpt_small(), shape, all), 2, 256)
            .frozen_weight_inputs == 0);
}

}  // namespace remat

namespace remat {

TEST_CASE("lora plans: the Llama family gets adapters on its seven projections, sound plans") {
  LoraSpec spec;
  spec.rank = 4;
  const Graph g = build_training_model(ModelConfig::preset("llama-tiny"), TrainShape{}, spec);
  const ModelConfig m = ModelConfig::preset("llama-tiny");
  CHECK(g.adapters.size() == 7u * static_cast<size_t>(m.layers));
  for (const LoraAdapter& a : g.adapters) CHECK_FALSE(a.fan_in_fan_out);
  for (const char* name : {"none", "every:1", "sqrt", "selective"})
    require_sound(g, plan_graph(g, {Policy::parse(name), std::nullopt, 64, nullptr}));
}

}  // namespace remat
