#include "planner/binding_pieces.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace remat {

std::vector<Piece> binding_pieces(uint64_t limit, uint64_t rows, uint64_t row_bytes,
                                  const char* what) {
  if (limit == 0 || rows * row_bytes <= limit) return {{0, static_cast<uint32_t>(rows)}};
  const uint64_t align_rows = 256 / std::gcd<uint64_t>(256, row_bytes);
  const uint64_t per_piece = limit / row_bytes / align_rows * align_rows;
  if (per_piece == 0)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(align_rows) +
                                " rows of " + std::to_string(row_bytes) +
                                " bytes (the smallest piece that keeps bindings 256-byte aligned) "
                                "do not fit a binding of " +
                                std::to_string(limit) + " bytes");
  std::vector<Piece> pieces;
  for (uint64_t b = 0; b < rows; b += per_piece)
    pieces.push_back(
        {static_cast<uint32_t>(b), static_cast<uint32_t>(std::min(per_piece, rows - b))});
  return pieces;
}

}  // namespace remat
