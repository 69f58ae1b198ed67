#include "base/row_positions.h"

namespace remat {

std::string row_positions_error(std::span<const uint32_t> positions, int seq) {
  if (seq <= 0) return "the sequence length must be positive";
  const std::size_t T = std::size_t(seq);
  if (positions.size() % T != 0)
    return std::to_string(positions.size()) + " position ids are no whole number of rows of " +
           std::to_string(T);
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const uint32_t p = positions[i];
    const bool row_start = i % T == 0;
    if (p == 0 || (!row_start && p == positions[i - 1] + 1)) continue;
    return "position id " + std::to_string(p) + " at index " + std::to_string(i) +
           (row_start ? " starts a row (rows start at 0)"
                      : " is neither 0 nor the previous id + 1");
  }
  return "";
}

void fill_plain_positions(std::span<uint32_t> positions, int seq) {
  for (std::size_t i = 0; i < positions.size(); ++i)
    positions[i] = static_cast<uint32_t>(i % std::size_t(seq));
}

}  // namespace remat
