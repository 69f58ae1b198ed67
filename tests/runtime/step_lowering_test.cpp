// The lowering without a device: every dispatch names the plan step it executes, so timings and
// errors are attributed by index, never by matching label strings.
#include "runtime/step_lowering.h"

#include <catch2/catch.hpp>

#include <bit>

#include "optimizer_params.h"

namespace remat {
namespace {

// Every tensor in a stand-in buffer of its own (never used with Vulkan).
TensorSlices fake_slices(const Plan& plan) {
  return [&plan](TensorId id) {
    return BufferSlice{std::bit_cast<VkBuffer>(uint64_t(id) + 1), 0,
                       plan.tensors.at(size_t(id)).bytes};
  };
}

void check_step_indices(const ModelConfig& model, const TrainShape& shape) {
  const Plan plan = remat::plan(model, shape, Policy::parse("every:2"));
  LoweringExtras extras;
  extras.adamw_hyper = {std::bit_cast<VkBuffer>(uint64_t{1} << 40), 0, sizeof(push::AdamWHyper)};
  extras.grad_norm_partials = {std::bit_cast<VkBuffer>(uint64_t{1} << 41), 0, 1 << 20};
  extras.grad_clip = 1;
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

}  // namespace
}  // namespace remat
