// Packing fine-tuning examples several to a row (formats/example_rows.h with `pack`).
//
// One pass over the examples reads them in the pass's order (file order, or the pass's shuffle
// permutation). An example of L tokens fills L - 1 positions of a row: inputs are its tokens
// 0 .. L-2, targets its tokens 1 .. L-1 where trained (its last token is only a target: it
// predicts nothing from the next example). An example cut to T + 1 tokens fills a whole row.
// First fit: each example in turn goes into the lowest-numbered row of this pass that still has
// room for it, else into a new row after the pass's last; a pass's rows are numbered in the order
// they were opened and hold their examples in pass order. Rows of one pass never take examples of
// another, so each pass trains each example once; the packing of a pass depends only on its
// order and T, so it is deterministic, and row k of a run is found again from k alone (a resumed
// run recomputes it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace remat {

struct PackedRow {
  std::vector<std::size_t> examples;  // indices into the pass's examples, in pass order
  int used = 0;                       // positions filled; the rest is padding
};

// First-fit rows of `lengths[i]` positions each (1 <= length <= seq), taken in order.
std::vector<PackedRow> pack_first_fit(std::span<const int> lengths, int seq);

}  // namespace remat
