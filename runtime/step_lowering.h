// Lowers each step of a Plan to the kernel dispatches that execute it. This is a pure
// translation: shapes come from the plan's tensors, choices (accumulate, weight layout, heads,
// dropout stream) from the step's attributes, bytes from the plan's placements. Nothing is
// decided here that the plan did not say, except kernel variants, which follow the device.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/plan.h"
#include "runtime/kernels/optimizer_table.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat {

// Buffers the optimizer and dropout kernels need besides the plan's tensors.
struct LoweringExtras {
  BufferSlice adamw_hyper;         // push::AdamWHyper, rewritten by the host before each step;
                                   // the cross-entropy backward reads its loss_scale
  BufferSlice grad_norm_partials;  // grad_norm_layout(...).total floats
  // push::OptimizerPiece entries of optimizer_table(plan, ...): when set, the gradient norm and
  // AdamW run as one dispatch each per binding window (runtime/kernels/optimizer_table.h);
  // when empty, one of each per parameter tensor (the same bits).
  BufferSlice optimizer_table;
  // Under Plan::row_loss_scales: the word of adamw_hyper where the rows' loss scales begin.
  uint32_t row_scales_word = 0;
  float grad_clip = 0;        // max gradient norm; 0 disables clipping
  uint64_t dropout_seed = 0;  // dropout masks are keyed by (seed, step, op id, element);
                              // the step is read from adamw_hyper at run time
};

// Which steps to lower, for gradient accumulation over micro-batches: the first micro-batch runs
// the plan's forward and backward as planned, later ones add every parameter-gradient
// contribution (+=), and the optimizer runs once after the last. The loss is the mean over the
// trained targets of all micro-batches together: the host writes its scale (AdamWHyper's
// loss_scale) before the step, so every part is lowered alike.
struct LoweringPart {
  // forward: the first pass only (to the losses); backward: the rest but the optimizer
  // (recomputes and gradients), for a step that reads the losses back in between.
  enum class Phases { all, forward_backward, optimizer, forward, backward };
  Phases phases = Phases::all;
  bool accumulate_parameter_grads = false;  // force += on parameter-gradient outputs
};

// Where a plan tensor's bytes are: persistent buffer or arena slice.
using TensorSlices = std::function<BufferSlice(TensorId)>;

// Every step's dispatches, in schedule order; each carries its step's index (Dispatch::step).
std::vector<Dispatch> lower_plan(const Plan& plan, const DeviceQuirks& quirks,
                                 const TensorSlices& slice_of, const LoweringExtras& extras,
                                 const LoweringPart& part = {});

// lower_plan of the whole step with every tensor in a buffer of its own: stand-in handles
// (buffer i + 1 for tensor i, then the AdamW block and the gradient-norm partials), never to be
// used with Vulkan, and each binding the tensor's planned size. The shapes and kernel variants
// are the real lowering's, for checks made before anything is allocated.
std::vector<Dispatch> lower_plan_stand_ins(const Plan& plan, const DeviceQuirks& quirks);

// A tensor that some dispatch of the plan binds in one piece although it is larger than
// quirks.max_binding_bytes (the device's maxStorageBufferRange): the kernels bind the token
// embedding, its gradient and moments in pieces, but activations such as the logits [B·T, V]
// whole. Such a plan cannot run; the first offender, or nothing.
struct OversizedBinding {
  std::string tensor;  // its name, e.g. "head.logits"
  Role role{};         // an activation (fix: smaller batch or sequence) or a parameter (model)
  uint64_t bytes = 0;  // its size
  std::string op;      // the dispatch that binds it, e.g. "matmul head.logits"
};
std::optional<OversizedBinding> oversized_binding(const Plan& plan, const DeviceQuirks& quirks);

// The optimizer table of the plan's AdamW steps, in schedule order (which is the gradient norm's
// order of the gradients), with its partial sums from the start of `partials`. The session
// uploads its pieces once; the lowering binds them.
kernels::OptimizerTable optimizer_table(const Plan& plan, const DeviceQuirks& quirks,
                                        const TensorSlices& slice_of, BufferSlice partials);

// Float count of the grad-norm partials buffer the plan's parameters need (tensors larger than
// one binding take one range per piece).
uint32_t grad_norm_partials_floats(const Plan& plan, const DeviceQuirks& quirks);

}  // namespace remat
