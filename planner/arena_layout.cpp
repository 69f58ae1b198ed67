#include "planner/arena_layout.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace remat {
namespace {

struct Placed {
  uint64_t begin;  // offset
  uint64_t end;    // offset + aligned size
};

// Smallest gap between (offset-sorted) conflicting items that holds `size`; else the end.
uint64_t best_fit(std::vector<Placed>& conflicts, uint64_t size) {
  std::sort(conflicts.begin(), conflicts.end(),
            [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
  uint64_t best = std::numeric_limits<uint64_t>::max();
  uint64_t best_gap = std::numeric_limits<uint64_t>::max();
  uint64_t cursor = 0;
  for (const Placed& p : conflicts) {
    if (p.begin > cursor) {
      const uint64_t gap = p.begin - cursor;
      if (gap >= size && gap < best_gap) {
        best_gap = gap;
        best = cursor;
      }
    }
    cursor = std::max(cursor, p.end);
  }
  return best != std::numeric_limits<uint64_t>::max() ? best : cursor;
}

}  // namespace

ArenaLayout layout_arena(const std::vector<uint64_t>& sizes, const std::vector<Interval>& intervals,
                         uint64_t alignment) {
  ArenaLayout out;
  out.offsets.assign(sizes.size(), 0);
  std::vector<size_t> order;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (intervals[i].used() && sizes[i] > 0) order.push_back(i);
  // Largest first; ties by first use so equal-size tensors stack in time order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b]) return sizes[a] > sizes[b];
    return intervals[a].first < intervals[b].first;
  });
  std::vector<size_t> placed;
  std::vector<Placed> conflicts;
  for (size_t i : order) {
    const uint64_t size = align_up(sizes[i], alignment);
    conflicts.clear();
    for (size_t j : placed)
      if (intervals[j].overlaps(intervals[i]))
        conflicts.push_back({out.offsets[j], out.offsets[j] + align_up(sizes[j], alignment)});
    out.offsets[i] = best_fit(conflicts, size);
    out.arena_bytes = std::max(out.arena_bytes, out.offsets[i] + size);
    placed.push_back(i);
  }
  return out;
}

}  // namespace remat
