#include "runtime/step_lowering.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "graph/op_schema.h"
#include "optimizer_params.h"
#include "runtime/kernels/optimizer.h"
#include "runtime/lowering_context.h"

namespace remat {

std::vector<Dispatch> lower_plan(const Plan& plan, const DeviceQuirks& quirks,
                                 const TensorSlices& slice_of, const LoweringExtras& extras,
                                 const LoweringPart& part) {
  using Phases = LoweringPart::Phases;
  LoweringContext l{plan, quirks, slice_of, extras, {}};
  if (extras.optimizer_table.buffer != VK_NULL_HANDLE)
    l.table = optimizer_table(plan, quirks, slice_of, extras.grad_norm_partials);
  bool past_forward = false;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& s = plan.steps[i];
    l.step_index = static_cast<int>(i);
    const bool optimizer = s.phase == Phase::optimizer;
    const bool forward = s.phase == Phase::forward;
    // The forward and backward parts run one after the other: only a schedule whose first
    // pass comes whole before everything else splits there into the same dispatches.
    const bool split = part.phases == Phases::forward || part.phases == Phases::backward;
    if (split && forward && past_forward)
      throw std::logic_error("lower_plan: a forward step follows the backward pass");
    past_forward = past_forward || !forward;
    if ((part.phases == Phases::forward_backward && optimizer) ||
        (part.phases == Phases::optimizer && !optimizer) ||
        (part.phases == Phases::forward && !forward) ||
        (part.phases == Phases::backward && (forward || optimizer)))
      continue;
    if (!part.accumulate_parameter_grads) {
      l.step(s);
      continue;
    }
    Step forced = s;
    for (std::size_t i = 0; i < forced.outputs.size(); ++i)
      if (plan.tensors.at(static_cast<std::size_t>(forced.outputs[i])).tensor.role ==
          Role::parameter_grad) {
        forced.attrs.accumulate.resize(forced.outputs.size(), 0);
        forced.attrs.accumulate[i] = 1;
      }
    l.step(forced);
  }
  return std::move(l.out);
}

std::vector<Dispatch> lower_plan_stand_ins(const Plan& plan, const DeviceQuirks& quirks) {
  auto handle = [](uint64_t i) { return std::bit_cast<VkBuffer>(i + 1); };
  const TensorSlices fake = [&](TensorId id) {
    return BufferSlice{handle(uint64_t(id)), 0, plan.tensors.at(size_t(id)).bytes};
  };
  LoweringExtras extras;
  extras.adamw_hyper = {handle(plan.tensors.size()), 0, sizeof(push::AdamWHyper)};
  extras.grad_norm_partials = {handle(plan.tensors.size() + 1), 0,
                               uint64_t(grad_norm_partials_floats(plan, quirks)) * 4};
  extras.grad_clip = 1;  // binds the norm too
  return lower_plan(plan, quirks, fake, extras);
}

std::optional<OversizedBinding> oversized_binding(const Plan& plan, const DeviceQuirks& quirks) {
  if (quirks.max_binding_bytes == 0) return std::nullopt;
  // Map each binding above the limit back to its tensor. The kernels' own piece logic decides
  // what is split, so this cannot disagree with the real lowering.
  for (const Dispatch& d : lower_plan_stand_ins(plan, quirks))
    for (const Binding& b : d.bindings) {
      const auto i = static_cast<std::size_t>(std::bit_cast<uint64_t>(b.slice.buffer) - 1);
      if (b.slice.size > quirks.max_binding_bytes && i < plan.tensors.size())
        return OversizedBinding{plan.tensors[i].tensor.name, plan.tensors[i].tensor.role,
                                b.slice.size, d.label};
    }
  return std::nullopt;
}

kernels::OptimizerTable optimizer_table(const Plan& plan, const DeviceQuirks& quirks,
                                        const TensorSlices& slice_of, BufferSlice partials) {
  std::vector<kernels::OptimizerTensor> tensors;
  std::size_t i = 0;
  for (const Step& s : plan.steps) {
    if (s.kind != OpKind::adamw) continue;
    namespace a = slot::adamw;
    // The partial sums are laid out in the gradient norm's order: it must be AdamW's.
    if (i >= plan.parameter_grads.size() || plan.parameter_grads[i++] != s.inputs.at(a::grad))
      throw std::logic_error("optimizer_table: AdamW steps out of the gradients' order");
    const uint64_t count = plan.tensors.at(size_t(s.inputs.at(a::param))).tensor.elements();
    tensors.push_back({slice_of(s.inputs.at(a::param)), slice_of(s.inputs.at(a::grad)),
                       slice_of(s.inputs.at(a::m)), slice_of(s.inputs.at(a::v)), count,
                       s.attrs.weight_decay});
  }
  if (i != plan.parameter_grads.size())
    throw std::logic_error("optimizer_table: a gradient without an AdamW step");
  return kernels::optimizer_table(quirks, tensors, partials);
}

uint32_t grad_norm_partials_floats(const Plan& plan, const DeviceQuirks& quirks) {
  std::vector<uint64_t> counts;
  for (TensorId g : plan.parameter_grads)
    counts.push_back(plan.tensors.at(size_t(g)).tensor.elements());
  return kernels::grad_norm_partials_floats(quirks, counts);
}

}  // namespace remat
