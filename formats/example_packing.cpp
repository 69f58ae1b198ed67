#include "formats/example_packing.h"

#include <algorithm>
#include <stdexcept>

namespace remat {
namespace {

// Free positions of rows 0 .. n-1 in a max segment tree, so that the first row with room for a
// length is found in O(log n). Rows not opened yet have all `seq` positions free and lie after
// the opened ones, so "the first row with room" is first fit over the opened rows, else the next
// new row.
class FreeTree {
 public:
  FreeTree(std::size_t n, int seq) : size_(1) {
    while (size_ < n) size_ *= 2;
    free_.assign(2 * size_, 0);
    for (std::size_t i = 0; i < n; ++i) free_[size_ + i] = seq;
    for (std::size_t i = size_ - 1; i >= 1; --i)
      free_[i] = std::max(free_[2 * i], free_[2 * i + 1]);
  }
  // The lowest row with at least `need` free positions (one exists: a fresh row has seq).
  std::size_t first_fit(int need) const {
    std::size_t i = 1;
    while (i < size_) i = free_[2 * i] >= need ? 2 * i : 2 * i + 1;
    return i - size_;
  }
  void take(std::size_t row, int count) {
    std::size_t i = size_ + row;
    free_[i] -= count;
    for (i /= 2; i >= 1; i /= 2) free_[i] = std::max(free_[2 * i], free_[2 * i + 1]);
  }

 private:
  std::size_t size_;
  std::vector<int> free_;
};

}  // namespace

std::vector<PackedRow> pack_first_fit(std::span<const int> lengths, int seq) {
  std::vector<PackedRow> rows;
  if (lengths.empty()) return rows;
  FreeTree tree(lengths.size(), seq);
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const int need = lengths[i];
    if (need < 1 || need > seq)
      throw std::invalid_argument("pack_first_fit: an example fills 1 .. T positions");
    const std::size_t row = tree.first_fit(need);
    if (row == rows.size()) rows.emplace_back();
    tree.take(row, need);
    rows[row].examples.push_back(i);
    rows[row].used += need;
  }
  return rows;
}

}  // namespace remat
