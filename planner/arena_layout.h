// Offsets inside the arena for tensors with known lifetimes: largest first, each into the
// best-fitting gap left by the already placed tensors whose lifetimes overlap its own (the
// strategy of TFLite's arena planner; our own code). Offsets are multiples of `alignment`; with
// a page size (planner/allocation_pages.h) no item crosses a multiple of it.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/liveness.h"

namespace remat {

struct ArenaLayout {
  std::vector<uint64_t> offsets;  // per item; meaningful only for used items with size > 0
  uint64_t arena_bytes = 0;       // end of the highest placed item
};

// sizes[i] (bytes, rounded up to alignment here) and intervals[i] describe item i; unused items
// (interval.first < 0) are not placed. `page` (a multiple of alignment, 0: none) must hold every
// item; the layout is the same as without pages when the arena fits one.
ArenaLayout layout_arena(const std::vector<uint64_t>& sizes, const std::vector<Interval>& intervals,
                         uint64_t alignment, uint64_t page = 0);

}  // namespace remat
