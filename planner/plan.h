// The planner's entry point and its product. A Plan is everything the runtime executes: every
// tensor with its placement (persistent buffer or arena, with byte offsets), the ordered steps,
// and the two buffer sizes. The runtime decides nothing; it does what the Plan says.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/cost_model.h"
#include "graph/graph.h"
#include "graph/lora.h"
#include "graph/model_config.h"
#include "planner/allocation_pages.h"
#include "planner/policy.h"
#include "planner/report.h"
#include "planner/schedule.h"
#include "planner/strategy.h"

namespace remat {

enum class Placement {
  unused,      // never touched by the schedule (no memory)
  persistent,  // in the persistent buffer (parameters, grads, AdamW moments, tokens, targets,
               // losses)
  arena,       // in the arena, valid only between first_step and last_step
};

struct PlannedTensor {
  Tensor tensor;                  // id equals the index in Plan::tensors
  TensorId original = kNoTensor;  // graph tensor whose value it holds (itself unless "@recompute")
  Placement placement = Placement::unused;  // which buffer
  uint64_t offset = 0;  // byte offset in that buffer (a multiple of Plan::alignment)
  uint64_t bytes = 0;   // exact size (tensor.bytes())
  int first_step = -1;  // arena: first step that writes it
  int last_step = -1;   // arena: last step that reads or writes it
};

struct PlanRequest {
  Policy policy;                   // which policy; automatic needs budget
  std::optional<uint64_t> budget;  // arena bytes the plan must fit (auto: required)
  uint64_t alignment = 256;  // offsets and sizes; the device's minStorageBufferOffsetAlignment
  const CostModel* costs = nullptr;  // measured cost table, or nullptr for the default model
  AllocationLimits allocation;       // the device's; both buffers are laid out in its pages
};

struct Plan {
  Policy policy;                         // the policy that produced it
  std::optional<uint64_t> budget_bytes;  // the budget it was asked to fit, if any
  uint64_t alignment = 256;              // of every offset in both buffers
  std::vector<PlannedTensor> tensors;    // graph tensors (same ids), then recompute versions
  std::vector<Step> steps;               // execute in this order
  uint64_t arena_bytes = 0;              // the arena's size, page padding included
  uint64_t arena_lower_bound = 0;        // most bytes live at one step (no layout can do better)
  uint64_t persistent_bytes = 0;         // the persistent buffer's size, page padding included
  AllocationLimits allocation;           // the limits both buffers were laid out under
  uint64_t page_bytes = 0;               // no tensor crosses a multiple of this (0: no pages)
  std::vector<uint64_t> persistent_allocations;  // allocation sizes, summing to persistent_bytes
  std::vector<uint64_t> arena_allocations;       // allocation sizes, summing to arena_bytes
  uint64_t persistent_padding = 0;  // bytes skipped so no persistent tensor crosses a page
  TensorId tokens = kNoTensor;      // [B,T] u32, persistent (written by the host)
  TensorId targets = kNoTensor;     // [B,T] u32, persistent (written by the host)
  TensorId positions = kNoTensor;   // [B,T] u32, packed rows only (written by the host)
  TensorId losses = kNoTensor;      // [B,T] f32, persistent (read by the host)
  // The loss backward reads one scale per row of the losses (TrainShape::row_loss_scales),
  // after push::AdamWHyper in the session's hyperparameter block (planner/session_extras.h).
  bool row_loss_scales = false;
  TensorId logits = kNoTensor;            // [B·T,V] arena, valid after the forward phase
  std::vector<TensorId> parameters;       // persistent, trained, in optimizer order
  std::vector<TensorId> frozen;           // persistent, never trained (LoRA's base weights)
  std::vector<LoraAdapter> adapters;      // LoRA adapters, in forward order
  std::vector<TensorId> parameter_grads;  // parallel to parameters
  std::vector<TensorId> adam_m;           // parallel to parameters
  std::vector<TensorId> adam_v;           // parallel to parameters
  Strategy strategy;                      // the checkpoint tree the steps came from
  Report report;                          // what it costs
};

// Any supported model: builds the training graph (with LoRA adapters when lora.enabled()) and
// plans it. Bad shapes, unknown policies, a missing or too-small budget are
// std::invalid_argument (the too-small message names the minimum bytes), and so is a tensor
// larger than one allocation under `allocation`.
Plan plan(const ModelConfig& model, const TrainShape& shape, const Policy& policy,
          std::optional<uint64_t> budget = std::nullopt, uint64_t alignment = 256,
          const CostModel* costs = nullptr, const LoraSpec& lora = {},
          const AllocationLimits& allocation = {});

// The smallest arena any plan reaches for this model and shape: `auto` at exactly this budget
// succeeds, one byte less is the documented error.
uint64_t minimum_arena_bytes(const ModelConfig& model, const TrainShape& shape,
                             uint64_t alignment = 256, const CostModel* costs = nullptr,
                             const LoraSpec& lora = {}, const AllocationLimits& allocation = {});

// Any training graph built by build_chain + autodiff (tests use random chains).
Plan plan_graph(const Graph& training_graph, const PlanRequest& request);

// Lowers one strategy to a full plan (schedule, liveness, layout, report); no budget check.
Plan plan_strategy(const Graph& training_graph, const Strategy& strategy,
                   const PlanRequest& request);

// The strategy a fixed (non-auto) policy uses on this chain.
Strategy policy_strategy(const Graph& training_graph, const Policy& policy);

}  // namespace remat
