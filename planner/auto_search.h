// `auto`: the least predicted time whose arena fits a byte budget.
//
// A dynamic programme over the block chain in the style of rotor (Beaumont, Eyraud-Dubois,
// Herrmann, Joly, Shilova: "Optimal checkpointing for heterogeneous chains", 2019), which
// generalizes Griewank's revolve to blocks of different sizes and costs. C(s, t, m) is the least
// time to run the backward of blocks s..t-1 with x_s held and m memory units free; it chooses
//   leaf   : backward of s alone, recomputing inside the block (t = s+1),
//   keep l : forward s keeping KeepLevel l (op-level choice per block, Korthikanti et al.'s
//            selective recomputation as one level), then C(s+1, t), then backward s,
//   split k: forward s..k-1 keeping only x_k, C(k, t), then C(s, k) — nesting happens when the
//            inner C(s, k) splits again.
// The DP's memory is a model (block_costs.h) in units rounded up per block, so a strategy's model
// peak can exceed its exact bytes by up to one unit per summed term. The search therefore starts
// that many units above the budget, builds and lays out each candidate exactly, and steps down to
// the next smaller model budget while the arena exceeds the budget. The fixed policies (none,
// selective, every:K for every K) are laid out exactly as well, and the fastest plan that fits
// wins: auto is never slower than any of them at the same budget.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "planner/block_costs.h"
#include "planner/plan.h"
#include "planner/strategy.h"

namespace remat {

class CheckpointDp {
 public:
  // Solves C(s, t, m) for all s < t and 0 <= m <= max_units.
  CheckpointDp(const ChainModel& model, int64_t max_units);

  static constexpr double kInfeasible = std::numeric_limits<double>::infinity();
  // Least predicted seconds for the whole chain with `units` free (clamped to max_units).
  double best_seconds(int64_t units) const;
  // The strategy achieving best_seconds(units); requires it to be finite.
  Strategy strategy(int64_t units) const;
  // Smallest units with a finite best_seconds, or -1.
  int64_t min_feasible_units() const;
  int64_t max_units() const { return max_units_; }

 private:
  size_t index(int s, int t, int64_t m) const;
  void solve(int s, int t);
  int build(Strategy& st, int s, int t, int64_t m) const;

  const ChainModel model_;
  int n_ = 0;
  int64_t max_units_ = 0;
  std::vector<double> cost_;     // C(s, t, m)
  std::vector<int32_t> choice_;  // 0 infeasible, 1 leaf, 2 keep all, 3 keep selective, 4+k split k
};

// Everything auto needs for one graph: block costs, the memory unit, the DP table.
class AutoPlanner {
 public:
  AutoPlanner(const Graph& graph, const PlanRequest& request);
  // The fastest plan (by the cost model) whose exact arena fits `budget`: the DP's, or a fixed
  // policy's when that is strictly faster. A budget below minimum_arena() is
  // std::invalid_argument naming that minimum in bytes.
  Plan plan(uint64_t budget) const;
  // The smallest budget plan() accepts.
  uint64_t minimum_arena() const;
  const ChainModel& model() const { return model_; }
  const CheckpointDp& dp() const { return dp_; }
  // Model units a strategy's rounded peak may exceed its exact bytes / quantum by: the most
  // terms one peak sums (every block input and keep, one gradient, one block's extra).
  int64_t rounding_slack() const { return slack_; }

 private:
  // A fixed policy's strategy with what its schedule costs and the least arena it can take.
  struct Fixed {
    Strategy strategy;
    double seconds = 0;        // predicted seconds, summed as the report sums them
    uint64_t lower_bound = 0;  // liveness lower bound: its arena is at least this
  };
  // The fastest DP strategy whose exact arena fits `budget`, if any.
  std::optional<Plan> dp_plan(uint64_t budget) const;
  // The strategy's exact plan when its arena fits `budget`.
  std::optional<Plan> fitting(const Strategy& strategy, uint64_t budget) const;

  const Graph& graph_;
  PlanRequest request_;
  ChainModel model_;
  CheckpointDp dp_;
  int64_t slack_ = 0;
  std::vector<Fixed> fixed_;  // by predicted seconds, then none, selective, every:1, every:2, ...
};

Plan plan_auto(const Graph& graph, const PlanRequest& request);

}  // namespace remat
