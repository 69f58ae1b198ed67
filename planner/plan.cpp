#include "planner/plan.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "graph/model_builder.h"
#include "planner/arena_layout.h"
#include "planner/auto_search.h"
#include "planner/budget_error.h"
#include "planner/liveness.h"

namespace remat {
namespace {

// Transformer blocks are the chain minus embedding and head.
int layer_count(const Graph& g) {
  return static_cast<int>(g.blocks.size()) - 2;
}

// Parameters, gradients, moments, frozen weights, io tensors, in this order, each in the first
// allocation page with room (planner/allocation_pages.h). Returns the buffer's size and padding.
std::pair<uint64_t, uint64_t> lay_out_persistent(const Graph& g, uint64_t alignment, uint64_t page,
                                                 std::vector<PlannedTensor>& out) {
  std::vector<TensorId> order;
  for (const auto* list : {&g.parameters, &g.parameter_grads, &g.adam_m, &g.adam_v, &g.frozen})
    order.insert(order.end(), list->begin(), list->end());
  order.insert(order.end(), {g.tokens, g.targets, g.losses});
  if (g.positions != kNoTensor) order.push_back(g.positions);
  std::vector<uint64_t> sizes;
  for (TensorId t : order) sizes.push_back(align_up(out[static_cast<size_t>(t)].bytes, alignment));
  const PackedPages packed = pack_in_pages(sizes, page);
  for (size_t i = 0; i < order.size(); ++i) {
    PlannedTensor& p = out[static_cast<size_t>(order[i])];
    p.placement = Placement::persistent;
    p.offset = packed.offsets[i];
  }
  return {packed.bytes, packed.padding};
}

// Every tensor must fit one allocation: the model's own first (no shape makes them smaller),
// then the step's activations.
void check_tensors_fit_pages(const Schedule& sched, uint64_t page) {
  for (const Tensor& t : sched.tensors)
    if (t.persistent) check_fits_page(t.name, t.bytes(), page, "use a smaller model");
  for (const Tensor& t : sched.tensors)
    if (!t.persistent)
      check_fits_page(t.name, t.bytes(), page, "use a smaller --batch, --seq or --loss-chunk");
}

std::optional<int> plan_interval(const Graph& g, const Policy& policy, const Report& r) {
  const int layers = layer_count(g);
  if (policy.kind == Policy::Kind::every) return policy.interval;
  if (policy.kind == Policy::Kind::sqrt)
    return std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(layers)))));
  if (policy.kind != Policy::Kind::automatic || r.checkpoints.empty()) return std::nullopt;
  // auto: the longest run of transformer blocks between consecutive checkpoints.
  std::vector<int> starts;
  for (int b : r.checkpoint_blocks)
    if (b >= 1 && static_cast<size_t>(b) + 1 < g.blocks.size()) starts.push_back(b);
  if (starts.empty()) return std::nullopt;
  starts.push_back(layers + 1);
  int longest = starts.front() - 1;
  for (size_t i = 1; i < starts.size(); ++i) longest = std::max(longest, starts[i] - starts[i - 1]);
  return std::max(1, longest);
}

}  // namespace

Strategy policy_strategy(const Graph& g, const Policy& policy) {
  const int n = static_cast<int>(g.blocks.size());
  const int layers = layer_count(g);
  switch (policy.kind) {
    case Policy::Kind::none:
      return store_all_strategy(n, KeepLevel::all);
    case Policy::Kind::selective:
      return store_all_strategy(n, KeepLevel::selective);
    case Policy::Kind::every:
    case Policy::Kind::sqrt: {
      int k = policy.interval;
      if (policy.kind == Policy::Kind::sqrt)
        k = std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(layers)))));
      if (k < 1)
        throw std::invalid_argument("every:K needs K >= 1, got every:" + std::to_string(k));
      // Segments: the embedding alone, runs of k transformer blocks, the head alone.
      std::vector<int> starts = {0};
      for (int b = 1; b <= layers; b += k) starts.push_back(b);
      starts.push_back(n - 1);
      return single_level_strategy(n, starts, std::vector<bool>(static_cast<size_t>(n), false),
                                   std::vector<KeepLevel>(static_cast<size_t>(n), KeepLevel::all));
    }
    case Policy::Kind::automatic:
      break;
  }
  throw std::invalid_argument("policy auto has no fixed strategy; it needs a budget");
}

Plan plan_strategy(const Graph& g, const Strategy& strategy, const PlanRequest& req) {
  if (req.alignment == 0) throw std::invalid_argument("alignment must be at least 1 byte");
  const CostModel default_costs;
  const CostModel& costs = req.costs ? *req.costs : default_costs;
  Schedule sched = build_schedule(g, strategy_actions(strategy));
  Liveness live = compute_liveness(sched, req.alignment);
  const uint64_t page = page_bytes(req.allocation, req.alignment);
  check_tensors_fit_pages(sched, page);
  std::vector<uint64_t> sizes;
  for (const Tensor& t : sched.tensors) sizes.push_back(t.persistent ? 0 : t.bytes());
  ArenaLayout layout = layout_arena(sizes, live.intervals, req.alignment, page);

  Plan p;
  p.policy = req.policy;
  p.budget_bytes = req.budget;
  p.alignment = req.alignment;
  for (size_t i = 0; i < sched.tensors.size(); ++i) {
    PlannedTensor pt;
    pt.tensor = sched.tensors[i];
    pt.original = sched.original[i];
    pt.bytes = pt.tensor.bytes();
    const Interval& iv = live.intervals[i];
    if (!pt.tensor.persistent && iv.used()) {
      pt.placement = Placement::arena;
      pt.offset = layout.offsets[i];
      pt.first_step = iv.first;
      pt.last_step = iv.last;
    }
    p.tensors.push_back(std::move(pt));
  }
  std::tie(p.persistent_bytes, p.persistent_padding) =
      lay_out_persistent(g, req.alignment, page, p.tensors);
  p.arena_bytes = layout.arena_bytes;
  p.allocation = req.allocation;
  p.page_bytes = page;
  p.persistent_allocations = page_sizes(p.persistent_bytes, page);
  p.arena_allocations = page_sizes(p.arena_bytes, page);
  p.arena_lower_bound = live.lower_bound;
  p.tokens = g.tokens;
  p.targets = g.targets;
  p.positions = g.positions;
  p.losses = g.losses;
  p.row_loss_scales = g.row_loss_scales;
  p.logits = g.logits;
  p.parameters = g.parameters;
  p.frozen = g.frozen;
  p.adapters = g.adapters;
  p.parameter_grads = g.parameter_grads;
  p.adam_m = g.adam_m;
  p.adam_v = g.adam_v;
  p.strategy = strategy;
  p.report = make_report(g, strategy, sched, live, req.alignment, costs);
  const Tensor& x =
      g.tensor(g.blocks.front().output != kNoTensor ? g.blocks.front().output : g.tokens);
  const Tensor& tokens = g.tensor(g.tokens);
  p.report.analytic =
      textbook_estimate(x.shape.back(), tokens.shape[1], layer_count(g), tokens.shape[0],
                        dtype_bytes(x.dtype), plan_interval(g, req.policy, p.report));
  p.steps = std::move(sched.steps);
  return p;
}

Plan plan_graph(const Graph& g, const PlanRequest& req) {
  if (req.policy.kind == Policy::Kind::automatic) {
    if (!req.budget)
      throw std::invalid_argument("policy auto needs an arena budget, e.g. --arena 64MiB");
    return plan_auto(g, req);
  }
  Plan p = plan_strategy(g, policy_strategy(g, req.policy), req);
  if (req.budget && p.arena_bytes > *req.budget)
    throw BudgetBelowMinimum("policy " + req.policy.to_string() + " needs an arena of " +
                                 std::to_string(p.arena_bytes) +
                                 " bytes, more than the budget of " + std::to_string(*req.budget) +
                                 " bytes; raise it or use auto",
                             p.arena_bytes);
  return p;
}

Plan plan(const ModelConfig& model, const TrainShape& shape, const Policy& policy,
          std::optional<uint64_t> budget, uint64_t alignment, const CostModel* costs,
          const LoraSpec& lora, const AllocationLimits& allocation) {
  const Graph g = build_training_model(model, shape, lora);
  return plan_graph(g, PlanRequest{policy, budget, alignment, costs, allocation});
}

uint64_t minimum_arena_bytes(const ModelConfig& model, const TrainShape& shape, uint64_t alignment,
                             const CostModel* costs, const LoraSpec& lora,
                             const AllocationLimits& allocation) {
  const Graph g = build_training_model(model, shape, lora);
  return AutoPlanner(g,
                     PlanRequest{Policy::parse("auto"), std::nullopt, alignment, costs, allocation})
      .minimum_arena();
}

}  // namespace remat
