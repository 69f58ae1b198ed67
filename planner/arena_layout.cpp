#include "planner/arena_layout.h"

#include "planner/allocation_pages.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace remat {
namespace {

struct Placed {
  uint64_t begin;  // offset
  uint64_t end;    // offset + aligned size
};

// Smallest gap between (offset-sorted) conflicting items that holds `size` inside one page;
// else the end (moved to the next page if it would cross one).
uint64_t best_fit(std::vector<Placed>& conflicts, uint64_t size, uint64_t page) {
  std::sort(conflicts.begin(), conflicts.end(),
            [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
  uint64_t best = std::numeric_limits<uint64_t>::max();
  uint64_t best_gap = std::numeric_limits<uint64_t>::max();
  uint64_t cursor = 0;
  for (const Placed& p : conflicts) {
    if (p.begin > cursor) {
      const uint64_t gap = p.begin - cursor;
      const uint64_t at = place_in_page(cursor, size, page);
      if (at + size <= p.begin && gap < best_gap) {
        best_gap = gap;
        best = at;
      }
    }
    cursor = std::max(cursor, p.end);
  }
  return best != std::numeric_limits<uint64_t>::max() ? best : place_in_page(cursor, size, page);
}

// One greedy pass: items in `order`, each into the best-fitting gap among placed conflicts.
ArenaLayout place(const std::vector<uint64_t>& sizes, const std::vector<Interval>& intervals,
                  uint64_t alignment, uint64_t page, const std::vector<size_t>& order) {
  ArenaLayout out;
  out.offsets.assign(sizes.size(), 0);
  std::vector<size_t> placed;
  std::vector<Placed> conflicts;
  for (size_t i : order) {
    const uint64_t size = align_up(sizes[i], alignment);
    conflicts.clear();
    for (size_t j : placed)
      if (intervals[j].overlaps(intervals[i]))
        conflicts.push_back({out.offsets[j], out.offsets[j] + align_up(sizes[j], alignment)});
    out.offsets[i] = best_fit(conflicts, size, page);
    out.arena_bytes = std::max(out.arena_bytes, out.offsets[i] + size);
    placed.push_back(i);
  }
  return out;
}

}  // namespace

ArenaLayout layout_arena(const std::vector<uint64_t>& sizes, const std::vector<Interval>& intervals,
                         uint64_t alignment, uint64_t page) {
  std::vector<size_t> items;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (intervals[i].used() && sizes[i] > 0) items.push_back(i);
  auto length = [&](size_t i) { return intervals[i].last - intervals[i].first; };
  // Largest first (TFLite's order), breaking size ties by first use or by longest lifetime; the
  // greedy is a heuristic, so two tie orders are tried and the smaller arena kept.
  std::vector<size_t> by_first = items, by_length = items;
  std::stable_sort(by_first.begin(), by_first.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b]) return sizes[a] > sizes[b];
    return intervals[a].first < intervals[b].first;
  });
  std::stable_sort(by_length.begin(), by_length.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b]) return sizes[a] > sizes[b];
    return length(a) > length(b);
  });
  ArenaLayout best = place(sizes, intervals, alignment, page, by_first);
  ArenaLayout other = place(sizes, intervals, alignment, page, by_length);
  return other.arena_bytes < best.arena_bytes ? other : best;
}

}  // namespace remat
