#include "planner/auto_search.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "planner/budget_error.h"
#include "planner/liveness.h"
#include "planner/schedule.h"

namespace remat {
namespace {

// Memory units for the largest plan (store everything): fine enough that rounding each block's
// numbers up costs little, coarse enough that gpt2-xl solves in milliseconds.
constexpr uint64_t kUnitsForStoreAll = 1024;

ChainModel make_model(const Graph& g, const PlanRequest& req) {
  const CostModel default_costs;
  const BlockCosts bytes = block_costs(g, req.alignment, req.costs ? *req.costs : default_costs);
  const int n = static_cast<int>(g.blocks.size());
  const int64_t store_all =
      simulate(quantize(bytes, 1), store_all_strategy(n, KeepLevel::all)).peak;
  const uint64_t q = std::max<uint64_t>(
      1, (static_cast<uint64_t>(store_all) + kUnitsForStoreAll - 1) / kUnitsForStoreAll);
  return quantize(bytes, q);
}

int64_t store_all_units(const ChainModel& m) {
  return simulate(m, store_all_strategy(static_cast<int>(m.blocks.size()), KeepLevel::all)).peak;
}

}  // namespace

CheckpointDp::CheckpointDp(const ChainModel& model, int64_t max_units)
    : model_(model),
      n_(static_cast<int>(model.blocks.size())),
      max_units_(std::max<int64_t>(0, max_units)) {
  const size_t size = static_cast<size_t>(n_ + 1) * static_cast<size_t>(n_ + 1) *
                      static_cast<size_t>(max_units_ + 1);
  cost_.assign(size, kInfeasible);
  choice_.assign(size, 0);
  for (int len = 1; len <= n_; ++len)
    for (int s = 0; s + len <= n_; ++s) solve(s, s + len);
}

size_t CheckpointDp::index(int s, int t, int64_t m) const {
  return (static_cast<size_t>(s) * static_cast<size_t>(n_ + 1) + static_cast<size_t>(t)) *
             static_cast<size_t>(max_units_ + 1) +
         static_cast<size_t>(m);
}

// Fills C(s, t, m) for every m. Each rule is a sweep over m reading sub-tables sequentially
// (cache-friendly); ties keep the earlier rule: leaf, keep all, keep selective, split by k.
void CheckpointDp::solve(int s, int t) {
  const auto& b = model_.blocks[static_cast<size_t>(s)];
  double* out = &cost_[index(s, t, 0)];
  int32_t* choice = &choice_[index(s, t, 0)];
  const int64_t top = max_units_;
  auto offer = [&](int64_t m, double c, int32_t rule) {
    if (c < out[m]) {
      out[m] = c;
      choice[m] = rule;
    }
  };
  // leaf: only for blocks whose forward already ran (all but the last, which must run forward
  // once to produce the loss).
  if (t == s + 1 && s != n_ - 1)
    for (int64_t m = b.bwd_extra[0]; m <= top; ++m) offer(m, b.recompute_s[0] + b.backward_s, 1);
  // keep: x_{s+1} stays held while C(s+1,t) runs; afterwards its gradient replaces the one of x_t.
  const int64_t x_next = s + 1 < t ? model_.input(s + 1) : 0;
  const int64_t grad_swap = s + 1 < t ? model_.input(s + 1) - model_.input(t) : 0;
  for (KeepLevel level : {KeepLevel::all, KeepLevel::selective}) {
    const size_t l = static_cast<size_t>(level_index(level));
    const double* sub = s + 1 == t ? nullptr : &cost_[index(s + 1, t, 0)];
    const int64_t lo =
        std::max({b.fwd_extra[l], b.keep[l] + x_next, b.bwd_extra[l] + b.keep[l] + grad_swap});
    const double own = b.forward_s + b.recompute_s[l] + b.backward_s;
    for (int64_t m = std::max<int64_t>(lo, 0); m <= top; ++m)
      offer(m, own + (sub ? sub[m - b.keep[l] - x_next] : 0.0), level == KeepLevel::all ? 2 : 3);
  }
  // split at k: forward s..k-1 holding only x_k, then C(k,t), then C(s,k).
  double forward_sum = 0;
  int64_t forward_peak = 0;
  for (int k = s + 1; k < t; ++k) {
    const int j = k - 1;
    const auto& bj = model_.blocks[static_cast<size_t>(j)];
    forward_sum += bj.forward_s;
    forward_peak = std::max(forward_peak, bj.fwd_extra[0] + (j > s ? model_.input(j) : 0));
    const int64_t xk = model_.input(k), xt = model_.input(t);
    const double* right = &cost_[index(k, t, 0)];
    const double* left = &cost_[index(s, k, 0)];
    for (int64_t m = std::max(forward_peak, xk); m <= top; ++m) {
      const double r = right[m - xk];
      if (r == kInfeasible) continue;
      offer(m, forward_sum + r + left[std::min(top, m - xk + xt)], 4 + k);
    }
  }
}

double CheckpointDp::best_seconds(int64_t units) const {
  if (units < 0 || n_ == 0) return kInfeasible;
  return cost_[index(0, n_, std::min(units, max_units_))];
}

int64_t CheckpointDp::min_feasible_units() const {
  for (int64_t m = 0; m <= max_units_; ++m)
    if (best_seconds(m) != kInfeasible) return m;
  return -1;
}

int CheckpointDp::build(Strategy& st, int s, int t, int64_t m) const {
  if (s == t) return -1;
  const int32_t ch = choice_[index(s, t, m)];
  if (ch == 0) throw std::logic_error("checkpoint DP: reconstructing an infeasible state");
  if (ch == 1) return st.add({StrategyNode::Kind::leaf, s, t, KeepLevel::none, -1, -1, -1});
  if (ch == 2 || ch == 3) {
    const KeepLevel level = ch == 2 ? KeepLevel::all : KeepLevel::selective;
    const size_t l = static_cast<size_t>(level_index(level));
    const int64_t x_next = s + 1 < t ? model_.input(s + 1) : 0;
    const int child =
        build(st, s + 1, t, m - model_.blocks[static_cast<size_t>(s)].keep[l] - x_next);
    return st.add({StrategyNode::Kind::keep, s, t, level, -1, child, -1});
  }
  const int k = ch - 4;
  const int64_t m_right = m - model_.input(k);
  const int right = build(st, k, t, m_right);
  const int left = build(st, s, k, std::min(max_units_, m_right + model_.input(t)));
  return st.add({StrategyNode::Kind::split, s, t, KeepLevel::none, k, right, left});
}

Strategy CheckpointDp::strategy(int64_t units) const {
  Strategy st;
  st.root = build(st, 0, n_, std::min(units, max_units_));
  return st;
}

AutoPlanner::AutoPlanner(const Graph& graph, const PlanRequest& request)
    : graph_(graph),
      request_(request),
      model_(make_model(graph, request)),
      dp_(model_, store_all_units(model_)),
      slack_(2 * static_cast<int64_t>(model_.blocks.size()) + 3) {
  request_.policy = Policy{Policy::Kind::automatic, 0};
  const CostModel default_costs;
  const CostModel& costs = request_.costs ? *request_.costs : default_costs;
  std::vector<Policy> policies = {Policy{}, Policy{Policy::Kind::selective, 0}};
  for (int k = 1; k <= static_cast<int>(graph.blocks.size()) - 2; ++k)
    policies.push_back(Policy{Policy::Kind::every, k});
  std::vector<std::vector<Action>> seen;
  for (const Policy& policy : policies) {
    Fixed f{policy_strategy(graph, policy)};
    std::vector<Action> actions = strategy_actions(f.strategy);
    if (std::find(seen.begin(), seen.end(), actions) != seen.end()) continue;
    const Schedule sched = build_schedule(graph, actions);
    seen.push_back(std::move(actions));
    for (const Step& st : sched.steps)
      f.seconds += costs.seconds(graph.ops[static_cast<size_t>(st.source_op)]);
    f.lower_bound = compute_liveness(sched, request_.alignment).lower_bound;
    fixed_.push_back(std::move(f));
  }
  std::stable_sort(fixed_.begin(), fixed_.end(),
                   [](const Fixed& a, const Fixed& b) { return a.seconds < b.seconds; });
}

std::optional<Plan> AutoPlanner::fitting(const Strategy& strategy, uint64_t budget) const {
  // The liveness bound rules most misfits out without a layout.
  if (compute_liveness(build_schedule(graph_, strategy_actions(strategy)), request_.alignment)
          .lower_bound > budget)
    return std::nullopt;
  PlanRequest req = request_;
  req.budget = budget;
  Plan p = plan_strategy(graph_, strategy, req);
  if (p.arena_bytes > budget) return std::nullopt;
  return p;
}

uint64_t AutoPlanner::minimum_arena() const {
  const int64_t lo = dp_.min_feasible_units();
  if (lo < 0) throw std::logic_error("auto: no strategy is feasible even with every byte");
  // A budget B reaches the DP's plan for model budget m when m <= B/q + slack and its exact arena
  // is <= B: the minimum over m of max(arena(m), (m - slack)*q), scanning m up while that floor
  // can still improve it. Then any fixed policy with a smaller arena.
  uint64_t best = std::numeric_limits<uint64_t>::max();
  std::vector<Action> previous;
  for (int64_t m = lo; m <= dp_.max_units(); ++m) {
    const uint64_t floor_bytes =
        static_cast<uint64_t>(std::max<int64_t>(0, m - slack_)) * model_.quantum;
    if (floor_bytes >= best) break;
    const Strategy st = dp_.strategy(m);
    std::vector<Action> actions = strategy_actions(st);
    if (actions == previous) continue;
    previous = std::move(actions);
    if (std::optional<Plan> p = fitting(st, best - 1))
      best = std::min(best, std::max(p->arena_bytes, floor_bytes));
  }
  for (const Fixed& f : fixed_)
    if (f.lower_bound < best)
      if (std::optional<Plan> p = fitting(f.strategy, best - 1)) best = p->arena_bytes;
  return best;
}

std::optional<Plan> AutoPlanner::dp_plan(uint64_t budget) const {
  // The DP's seconds only fall as m grows, so the first fit scanning down is the fastest. The scan
  // starts `slack_` units above the budget: rounding each block's bytes up must not hide a
  // strategy whose exact arena fits.
  const uint64_t units =
      std::min<uint64_t>(budget / model_.quantum, static_cast<uint64_t>(dp_.max_units()));
  const int64_t top = std::min(static_cast<int64_t>(units) + slack_, dp_.max_units());
  std::vector<Action> previous;
  for (int64_t m = top; m >= 0 && dp_.best_seconds(m) != CheckpointDp::kInfeasible; --m) {
    const Strategy st = dp_.strategy(m);
    std::vector<Action> actions = strategy_actions(st);
    if (actions == previous) continue;
    previous = std::move(actions);
    if (std::optional<Plan> p = fitting(st, budget)) return p;
  }
  return std::nullopt;
}

Plan AutoPlanner::plan(uint64_t budget) const {
  // Storing everything is the fastest plan there is; when its exact arena fits, it is the answer,
  // whatever the DP's rounded memory units would say.
  {
    PlanRequest req = request_;
    req.budget = budget;
    Plan none = plan_strategy(graph_, policy_strategy(graph_, Policy{}), req);
    if (none.arena_bytes <= budget) {
      none.policy = request_.policy;
      return none;
    }
  }
  std::optional<Plan> best = dp_plan(budget);
  // A fixed policy replaces the DP's plan only when strictly faster; fixed_ is sorted by seconds
  // (ties in a fixed order), so the first that fits is the fastest of them.
  for (const Fixed& f : fixed_) {
    if (best && !(f.seconds < best->report.predicted_seconds)) break;
    if (f.lower_bound > budget) continue;
    if (std::optional<Plan> p = fitting(f.strategy, budget)) {
      best = std::move(p);
      break;
    }
  }
  if (best) return std::move(*best);
  const uint64_t minimum = minimum_arena();
  throw BudgetBelowMinimum("arena budget of " + std::to_string(budget) +
                               " bytes is below the smallest feasible plan; the minimum is " +
                               std::to_string(minimum) + " bytes",
                           minimum);
}

Plan plan_auto(const Graph& graph, const PlanRequest& request) {
  return AutoPlanner(graph, request).plan(*request.budget);
}

}  // namespace remat
