#include "planner/strategy.h"

#include <stdexcept>

namespace remat {
namespace {

void emit(const Strategy& s, int index, std::vector<Action>& out) {
  const StrategyNode& n = s.nodes.at(static_cast<size_t>(index));
  switch (n.kind) {
    case StrategyNode::Kind::leaf:
      out.push_back({false, n.begin, KeepLevel::none, false});
      return;
    case StrategyNode::Kind::keep:
      out.push_back({true, n.begin, n.level, true});
      if (n.first >= 0) emit(s, n.first, out);
      out.push_back({false, n.begin, KeepLevel::none, false});
      return;
    case StrategyNode::Kind::split:
      for (int j = n.begin; j < n.split; ++j)
        out.push_back({true, j, KeepLevel::none, j == n.begin});
      emit(s, n.first, out);
      emit(s, n.second, out);
      return;
  }
}

// The recompute tree of a checkpointed segment [s, e): keep s..e-2 at their levels, then the
// last block recomputes inside its own backward.
int segment_tree(Strategy& st, int s, int e, const std::vector<KeepLevel>& levels) {
  if (e - s == 1) return st.add({StrategyNode::Kind::leaf, s, e, KeepLevel::none, -1, -1, -1});
  const int child = segment_tree(st, s + 1, e, levels);
  return st.add({StrategyNode::Kind::keep, s, e, levels[static_cast<size_t>(s)], -1, child, -1});
}

int keep_chain(Strategy& st, int s, int n, const std::vector<KeepLevel>& levels) {
  if (s == n) return -1;
  const int child = keep_chain(st, s + 1, n, levels);
  return st.add({StrategyNode::Kind::keep, s, n, levels[static_cast<size_t>(s)], -1, child, -1});
}

}  // namespace

const char* keep_level_name(KeepLevel l) {
  switch (l) {
    case KeepLevel::none:
      return "none";
    case KeepLevel::selective:
      return "selective";
    case KeepLevel::all:
      return "all";
  }
  return "?";
}

int Strategy::add(StrategyNode n) {
  nodes.push_back(n);
  return static_cast<int>(nodes.size()) - 1;
}

std::string Strategy::describe() const {
  std::string out;
  for (const Action& a : strategy_actions(*this)) {
    if (!out.empty()) out += ' ';
    out += a.forward ? 'F' : 'B';
    out += std::to_string(a.block);
    if (a.forward && a.level == KeepLevel::all) out += 'a';
    if (a.forward && a.level == KeepLevel::selective) out += 's';
    if (a.forward && a.level == KeepLevel::none && a.keep_input) out += 'c';
  }
  return out;
}

std::vector<Action> strategy_actions(const Strategy& s) {
  std::vector<Action> out;
  if (s.root >= 0) emit(s, s.root, out);
  return out;
}

Strategy store_all_strategy(int blocks, KeepLevel level) {
  Strategy st;
  st.root = keep_chain(st, 0, blocks, std::vector<KeepLevel>(static_cast<size_t>(blocks), level));
  return st;
}

Strategy single_level_strategy(int blocks, const std::vector<int>& starts,
                               const std::vector<bool>& stored,
                               const std::vector<KeepLevel>& levels) {
  if (starts.empty() || starts.front() != 0)
    throw std::logic_error("single_level_strategy: segments must start at block 0");
  for (size_t i = 1; i < starts.size(); ++i)
    if (starts[i] <= starts[i - 1] || starts[i] >= blocks)
      throw std::logic_error(
          "single_level_strategy: segment starts must increase inside the chain");
  Strategy st;
  // Build from the last segment backwards: C(s_i, n) wraps C(s_{i+1}, n).
  int rest = -1;
  for (size_t i = starts.size(); i-- > 0;) {
    const int s = starts[i];
    const int e = i + 1 < starts.size() ? starts[i + 1] : blocks;
    if (e == blocks) {
      rest = keep_chain(st, s, blocks, levels);
    } else if (e - s == 1 && stored[static_cast<size_t>(s)]) {
      rest = st.add(
          {StrategyNode::Kind::keep, s, blocks, levels[static_cast<size_t>(s)], -1, rest, -1});
    } else {
      const int seg = segment_tree(st, s, e, levels);
      rest = st.add({StrategyNode::Kind::split, s, blocks, KeepLevel::none, e, rest, seg});
    }
  }
  st.root = rest;
  return st;
}

}  // namespace remat
