// The lowering without a device: every dispatch names the plan step it executes, so timings and
// errors are attributed by index, never by matching label strings.
#include "runtime/step_lowering.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <map>

#include "attention_params.h"
#include "optimizer_params.h"
#include "planner/verify.h"
#include "rope_params.h"
#include "tests/graph/partial_rope_llama.h"
#include "tests/graph/windowed_llama.h"

namespace remat {
namespace {

// Every tensor in a stand-in buffer of its own (never used with Vulkan).
TensorSlices fake_slices(const Plan& plan) {
  return [&plan](TensorId id) {
    return BufferSlice{std::bit_cast<VkBuffer>(uint64_t(id) + 1), 0,
                       plan.tensors.at(size_t(id)).bytes};
  };
}

// The optimizer's buffers, stand-ins as well.
LoweringExtras fake_extras() {
  LoweringExtras extras;
  extras.adamw_hyper = {std::bit_cast<VkBuffer>(uint64_t{1} << 40), 0, sizeof(push::AdamWHyper)};
  extras.grad_norm_partials = {std::bit_cast<VkBuffer>(uint64_t{1} << 41), 0, 1 << 20};
  extras.grad_clip = 1;
  return extras;
}

void check_step_indices(const ModelConfig& model, const TrainShape& shape) {
  const Plan plan = remat::plan(model, shape, Policy::parse("every:2"));
  const LoweringExtras extras = fake_extras();
  const auto dispatches = lower_plan(plan, DeviceQuirks{}, fake_slices(plan), extras);
  std::vector<int> per_step(plan.steps.size(), 0);
  int last = -1;
  for (const Dispatch& d : dispatches) {
    REQUIRE(d.step >= 0);
    REQUIRE(static_cast<size_t>(d.step) < plan.steps.size());
    CHECK(d.step >= last);  // schedule order
    last = d.step;
    ++per_step[static_cast<size_t>(d.step)];
    const Step& s = plan.steps[static_cast<size_t>(d.step)];
    CHECK(d.label.rfind(std::string(op_kind_name(s.kind)) + " ", 0) == 0);
  }
  for (size_t i = 0; i < per_step.size(); ++i) {
    INFO("step " << i << " " << op_kind_name(plan.steps[i].kind));
    CHECK(per_step[i] >= 1);
  }

  // Only the optimizer: the indices still point into the whole plan.
  const auto opt = lower_plan(plan, DeviceQuirks{}, fake_slices(plan), extras,
                              {LoweringPart::Phases::optimizer, false});
  REQUIRE(!opt.empty());
  for (const Dispatch& d : opt)
    CHECK(plan.steps.at(static_cast<size_t>(d.step)).phase == Phase::optimizer);
}

TEST_CASE("lowering: every dispatch carries the index of the plan step it executes") {
  TrainShape shape;
  shape.dropout = 0.1f;
  check_step_indices(ModelConfig::preset("tiny"), shape);
  // The Llama family: token embedding, RMSNorm, RoPE, grouped-query attention, SwiGLU.
  ModelConfig llama = ModelConfig::preset("llama-tiny");
  llama.qkv_bias = true;
  check_step_indices(llama, TrainShape{2, 16, 0.0f, DType::f32});
}

TEST_CASE("lowering: attention steps pass their window and score scale to every dispatch") {
  // Layer i's window is 5 + i; every:1 recomputes each layer's attention in its backward.
  const Graph g = testing::windowed_llama(TrainShape{2, 16, 0.0f, DType::f32}, 5, 0.3f);
  const Plan plan = plan_graph(g, {Policy::parse("every:1"), std::nullopt, 256, nullptr});
  REQUIRE(verify_plan(g, plan).empty());  // steps carry their op's attributes
  const auto dispatches = lower_plan(plan, DeviceQuirks{}, fake_slices(plan), fake_extras());
  std::map<Phase, int> seen;
  for (const Dispatch& d : dispatches) {
    const Step& s = plan.steps.at(static_cast<size_t>(d.step));
    if (s.kind != OpKind::gqa_attention && s.kind != OpKind::gqa_attention_backward) continue;
    INFO(op_kind_name(s.kind) << " " << phase_name(s.phase) << " block " << s.block);
    push::AttentionParams p;
    REQUIRE(d.push.size() == sizeof p);
    std::memcpy(&p, d.push.data(), sizeof p);
    CHECK(p.window == uint32_t(5 + s.block - 1));  // block 0 is the embedding
    CHECK(p.scale == 0.3f);
    ++seen[s.phase];
  }
  const int layers = ModelConfig::preset("llama-tiny").layers;
  CHECK(seen[Phase::forward] == layers);
  CHECK(seen[Phase::recompute] == layers);
  CHECK(seen[Phase::backward] == layers);
}

TEST_CASE("lowering: rope steps pass their rotary dims to every dispatch") {
  // llama-tiny: heads of 32, of which rotary_dims 8 turn; every:1 recomputes each layer's ropes.
  const TrainShape shape{2, 16, 0.0f, DType::f32};
  const Graph g = testing::partial_rope_llama(shape, 8);
  const Plan plan = plan_graph(g, {Policy::parse("every:1"), std::nullopt, 256, nullptr});
  REQUIRE(verify_plan(g, plan).empty());  // steps carry their op's attributes
  const auto dispatches = lower_plan(plan, DeviceQuirks{}, fake_slices(plan), fake_extras());
  std::map<Phase, int> seen;
  for (const Dispatch& d : dispatches) {
    const Step& s = plan.steps.at(static_cast<size_t>(d.step));
    if (s.kind != OpKind::rope && s.kind != OpKind::rope_backward) continue;
    INFO(op_kind_name(s.kind) << " " << phase_name(s.phase) << " block " << s.block);
    push::RopeParams p;
    REQUIRE(d.push.size() == sizeof p);
    std::memcpy(&p, d.push.data(), sizeof p);
    CHECK(p.D == 32);
    CHECK(p.R == 8);
    CHECK(p.copy_rest == 1);  // rope's y is a tensor of its own
    ++seen[s.phase];
  }
  const int ropes = 2 * ModelConfig::preset("llama-tiny").layers;  // q and k
  CHECK(seen[Phase::forward] == ropes);
  CHECK(seen[Phase::recompute] == ropes);
  CHECK(seen[Phase::backward] == ropes);

  // Rotary dims past the head size are refused where the step is lowered.
  const Graph wide = testing::partial_rope_llama(shape, 34);
  const Plan wide_plan = plan_graph(wide, {Policy::parse("every:1"), std::nullopt, 256, nullptr});
  CHECK_THROWS_AS(lower_plan(wide_plan, DeviceQuirks{}, fake_slices(wide_plan), fake_extras()),
                  std::invalid_argument);
}

}  // namespace
}  // namespace remat
