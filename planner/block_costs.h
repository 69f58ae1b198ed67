// The per-block numbers the checkpoint DP reasons with, measured on the block's own ops with the
// same lifetime rules the schedule uses: bytes kept per KeepLevel, extra bytes at the forward and
// backward peaks, and predicted seconds for forward, backward and in-block recompute.
// ChainModel is the same in memory units of `quantum` bytes (rounded up: the model errs safe).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "graph/cost_model.h"
#include "graph/graph.h"
#include "planner/strategy.h"

namespace remat {

inline constexpr int kLevels = 3;  // KeepLevel::none, selective, all
inline int level_index(KeepLevel l) {
  return static_cast<int>(l);
}

template <typename Bytes>
struct BlockModel {
  Bytes input = 0;                            // x_i (and its gradient, same size); 0 for block 0
  double forward_s = 0;                       // all forward ops
  double backward_s = 0;                      // all backward ops
  std::array<double, kLevels> recompute_s{};  // in-block recompute before the backward, per level
  std::array<Bytes, kLevels> keep{};          // bytes held between forward and backward, per level
  std::array<Bytes, kLevels> fwd_extra{};     // peak bytes during the forward beyond what was held
  std::array<Bytes, kLevels> bwd_extra{};     // peak bytes during the backward beyond what was held
};

// blocks[i] for the chain; the input of block n (the head's output) is 0.
template <typename Bytes>
struct ChainModelT {
  std::vector<BlockModel<Bytes>> blocks;  // in chain order
  uint64_t quantum = 1;                   // bytes per unit (1: exact bytes)
  Bytes input(int i) const {
    return i < static_cast<int>(blocks.size()) ? blocks[static_cast<size_t>(i)].input : 0;
  }
};

using BlockCosts = ChainModelT<uint64_t>;  // in bytes
using ChainModel = ChainModelT<int64_t>;   // in units of quantum

BlockCosts block_costs(const Graph& graph, uint64_t alignment, const CostModel& costs);
ChainModel quantize(const BlockCosts& costs, uint64_t quantum);

// Independent accounting of one strategy under the model: walks its actions with a held-bytes
// ledger. Used to size the DP table and, in tests, as the brute force's evaluator.
struct ModelRun {
  double seconds = 0;  // predicted time of all forward, recompute and backward work
  int64_t peak = 0;    // most units in use at any action
};
ModelRun simulate(const ChainModel& model, const Strategy& strategy);
ModelRun simulate(const ChainModel& model, const std::vector<Action>& actions);

}  // namespace remat
