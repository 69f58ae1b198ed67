#include "planner/block_costs.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "planner/schedule.h"

namespace remat {
namespace {

bool recomputable(const Graph& g, TensorId t) {
  const Tensor& x = g.tensor(t);
  return x.role == Role::activation && !x.persistent;
}

// Ops of block b's forward that its backward must rerun when `held` is available (mirrors
// the schedule's recompute rule).
std::vector<int> recompute_ops(const Graph& g, const Block& b,
                               const std::unordered_set<TensorId>& held) {
  std::unordered_set<TensorId> need;
  for (int op : b.backward_ops)
    for (TensorId t : g.ops[static_cast<size_t>(op)].inputs)
      if (recomputable(g, t) && !held.count(t)) need.insert(t);
  std::vector<int> rerun;
  for (auto it = b.forward_ops.rbegin(); it != b.forward_ops.rend(); ++it) {
    const Op& op = g.ops[static_cast<size_t>(*it)];
    if (std::none_of(op.outputs.begin(), op.outputs.end(),
                     [&](TensorId t) { return need.count(t) > 0; }))
      continue;
    rerun.insert(rerun.begin(), *it);
    for (TensorId t : op.inputs)
      if (recomputable(g, t) && !held.count(t)) need.insert(t);
  }
  return rerun;
}

// Peak of live bytes over `steps` (op indices), where `start` tensors are live before step 0 and
// `survive` tensors stay live after the last step. Lifetimes as in liveness: write .. last touch.
uint64_t peak_live(const Graph& g, const std::vector<int>& steps,
                   const std::unordered_set<TensorId>& start,
                   const std::unordered_set<TensorId>& survive, uint64_t alignment) {
  const int end = static_cast<int>(steps.size());
  std::map<TensorId, std::pair<int, int>> life;  // tensor -> [first, last]
  for (TensorId t : start) life[t] = {-1, -1};
  for (int s = 0; s < end; ++s) {
    const Op& op = g.ops[static_cast<size_t>(steps[static_cast<size_t>(s)])];
    for (TensorId t : op.inputs)
      if (life.count(t)) life[t].second = s;
    for (TensorId t : op.outputs) {
      if (g.tensor(t).persistent) continue;
      auto it = life.find(t);
      if (it == life.end())
        life[t] = {s, s};
      else
        it->second.second = s;
    }
  }
  uint64_t peak = 0;
  for (int s = std::min(0, end - 1); s < std::max(end, 1); ++s) {
    uint64_t live = 0;
    for (const auto& [t, iv] : life) {
      const int last = survive.count(t) ? end : iv.second;
      if (iv.first <= s && s <= last) live += align_up(g.tensor(t).bytes(), alignment);
    }
    peak = std::max(peak, live);
  }
  return peak;
}

uint64_t total_bytes(const Graph& g, const std::unordered_set<TensorId>& ts, uint64_t alignment) {
  uint64_t n = 0;
  for (TensorId t : ts) n += align_up(g.tensor(t).bytes(), alignment);
  return n;
}

BlockModel<uint64_t> model_block(const Graph& g, int index, uint64_t alignment,
                                 const CostModel& costs) {
  const Block& b = g.blocks[static_cast<size_t>(index)];
  BlockModel<uint64_t> m;
  if (b.input != kNoTensor) m.input = align_up(g.tensor(b.input).bytes(), alignment);
  for (int op : b.forward_ops) m.forward_s += costs.seconds(g.ops[static_cast<size_t>(op)]);
  for (int op : b.backward_ops) m.backward_s += costs.seconds(g.ops[static_cast<size_t>(op)]);
  std::unordered_set<TensorId> reads;  // activations the backward reads
  for (int op : b.backward_ops)
    for (TensorId t : g.ops[static_cast<size_t>(op)].inputs) reads.insert(t);
  for (KeepLevel level : {KeepLevel::none, KeepLevel::selective, KeepLevel::all}) {
    const int li = level_index(level);
    std::unordered_set<TensorId> held = kept_tensors(g, index, level);
    held.erase(b.input);
    const std::vector<int> rerun = recompute_ops(g, b, [&] {
      auto h = held;
      if (b.input != kNoTensor) h.insert(b.input);
      return h;
    }());
    // What survives the forward: kept tensors that the recompute or the backward reads.
    std::unordered_set<TensorId> bwd_reads = reads;
    for (int op : rerun)
      for (TensorId t : g.ops[static_cast<size_t>(op)].inputs) bwd_reads.insert(t);
    std::unordered_set<TensorId> survivors;
    for (TensorId t : held)
      if (bwd_reads.count(t) && t != b.output) survivors.insert(t);
    m.keep[static_cast<size_t>(li)] = total_bytes(g, survivors, alignment);
    for (int op : rerun)
      m.recompute_s[static_cast<size_t>(li)] += costs.seconds(g.ops[static_cast<size_t>(op)]);

    std::unordered_set<TensorId> fwd_survive = survivors;
    if (b.output != kNoTensor) fwd_survive.insert(b.output);
    m.fwd_extra[static_cast<size_t>(li)] = peak_live(g, b.forward_ops, {}, fwd_survive, alignment);

    // Backward: held at start = input, survivors, gradient of the output.
    std::vector<int> steps = rerun;
    steps.insert(steps.end(), b.backward_ops.begin(), b.backward_ops.end());
    std::unordered_set<TensorId> start = survivors;
    if (b.input != kNoTensor) start.insert(b.input);
    const auto grad = [&](TensorId t) {
      return t == kNoTensor ? kNoTensor : g.grad_of[static_cast<size_t>(t)];
    };
    const TensorId grad_out = grad(b.output), grad_in = grad(b.input);
    if (grad_out != kNoTensor) start.insert(grad_out);
    std::unordered_set<TensorId> survive;
    if (grad_in != kNoTensor) survive.insert(grad_in);
    const uint64_t held_bytes = total_bytes(g, start, alignment);
    const uint64_t peak = peak_live(g, steps, start, survive, alignment);
    m.bwd_extra[static_cast<size_t>(li)] = peak > held_bytes ? peak - held_bytes : 0;
  }
  return m;
}

int64_t units(uint64_t bytes, uint64_t q) {
  return static_cast<int64_t>((bytes + q - 1) / q);
}

}  // namespace

BlockCosts block_costs(const Graph& graph, uint64_t alignment, const CostModel& costs) {
  BlockCosts c;
  for (size_t i = 0; i < graph.blocks.size(); ++i)
    c.blocks.push_back(model_block(graph, static_cast<int>(i), alignment, costs));
  return c;
}

ChainModel quantize(const BlockCosts& costs, uint64_t quantum) {
  ChainModel m;
  m.quantum = std::max<uint64_t>(1, quantum);
  for (const auto& b : costs.blocks) {
    BlockModel<int64_t> u;
    u.input = units(b.input, m.quantum);
    u.forward_s = b.forward_s;
    u.backward_s = b.backward_s;
    u.recompute_s = b.recompute_s;
    for (size_t l = 0; l < kLevels; ++l) {
      u.keep[l] = units(b.keep[l], m.quantum);
      u.fwd_extra[l] = units(b.fwd_extra[l], m.quantum);
      u.bwd_extra[l] = units(b.bwd_extra[l], m.quantum);
    }
    m.blocks.push_back(u);
  }
  return m;
}

ModelRun simulate(const ChainModel& model, const Strategy& strategy) {
  return simulate(model, strategy_actions(strategy));
}

ModelRun simulate(const ChainModel& model, const std::vector<Action>& actions) {
  const size_t n = model.blocks.size();
  std::vector<bool> x_held(n + 1, false), grad_held(n + 1, false);
  std::vector<int> level(n, -1);  // held KeepLevel per block, -1: nothing held
  int64_t held = 0;
  ModelRun run;
  auto x = [&](size_t i) { return model.input(static_cast<int>(i)); };
  for (const Action& a : actions) {
    const size_t j = static_cast<size_t>(a.block);
    const auto& b = model.blocks[j];
    const size_t li = static_cast<size_t>(level_index(a.level));
    if (a.forward) {
      run.seconds += b.forward_s;
      run.peak = std::max(run.peak, held + b.fwd_extra[li]);
      if (a.level != KeepLevel::none) {
        level[j] = static_cast<int>(li);
        held += b.keep[li];
      }
      // A recreated output whose gradient already exists is never read again.
      if (!grad_held[j + 1] && !x_held[j + 1]) {
        x_held[j + 1] = true;
        held += x(j + 1);
      }
      if (!a.keep_input && a.level == KeepLevel::none && x_held[j]) {
        x_held[j] = false;
        held -= x(j);
      }
    } else {
      const size_t held_level = level[j] < 0 ? 0 : static_cast<size_t>(level[j]);
      run.seconds += b.recompute_s[held_level] + b.backward_s;
      run.peak = std::max(run.peak, held + b.bwd_extra[held_level]);
      held -= b.keep[held_level];
      level[j] = -1;
      if (x_held[j]) held -= x(j);
      if (x_held[j + 1]) held -= x(j + 1);
      if (grad_held[j + 1]) held -= x(j + 1);
      x_held[j] = x_held[j + 1] = grad_held[j + 1] = false;
      grad_held[j] = true;
      held += x(j);
    }
  }
  return run;
}

}  // namespace remat
