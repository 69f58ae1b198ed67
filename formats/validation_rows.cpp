#include "formats/validation_rows.h"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/ignore_target.h"
#include "base/row_positions.h"

namespace remat {
namespace {

// Rows of one example a row: batches of B distinct examples while the file has them (at least
// one batch, at most max_batches).
uint64_t plain_rows(std::size_t examples, int batch, int max_batches) {
  if (batch < 1 || max_batches < 1)
    throw std::invalid_argument("validation needs a batch and a batch count of at least 1");
  const uint64_t whole = std::max<uint64_t>(1, examples / uint64_t(batch));
  return uint64_t(batch) * std::min<uint64_t>(whole, uint64_t(max_batches));
}

// Examples k mod n for k < rows: what rows 0 .. rows-1 of one example a row read.
ExampleRows evaluated_examples(const ExampleRows& held_out, uint64_t rows, bool pack) {
  std::vector<TokenExample> picked;
  picked.reserve(rows);
  for (uint64_t k = 0; k < rows; ++k) picked.push_back(held_out.example(k % held_out.size()));
  return ExampleRows(std::move(picked), held_out.seq(), held_out.pad(), held_out.origin(),
                     std::nullopt, pack);
}

}  // namespace

ValidationRows::ValidationRows(const ExampleRows& held_out, int batch, int max_batches, bool pack)
    : evaluated_(
          evaluated_examples(held_out, plain_rows(held_out.size(), batch, max_batches), pack)),
      batch_(batch),
      rows_(pack ? evaluated_.packing().packed_rows : evaluated_.size()),
      batches_(int((rows_ + uint64_t(batch) - 1) / uint64_t(batch))) {}

Batch ValidationRows::batch(int k) const {
  if (k < 0 || k >= batches_)
    throw std::out_of_range("validation batch " + std::to_string(k) + " of " +
                            std::to_string(batches_));
  Batch b = evaluated_.batch(uint64_t(k), batch_);
  // Rows past the evaluated ones (the next pass's, packed) are padding: no target is read twice.
  const std::size_t T = std::size_t(evaluated_.seq());
  for (uint64_t row = uint64_t(k) * batch_; row < uint64_t(k + 1) * batch_; ++row) {
    if (row < rows_) continue;
    const std::size_t at = std::size_t(row - uint64_t(k) * batch_) * T;
    std::fill_n(b.tokens.begin() + at, T, evaluated_.pad());
    std::fill_n(b.targets.begin() + at, T, kIgnoreTarget);
    if (!b.positions.empty())
      fill_plain_positions(std::span<uint32_t>(b.positions.data() + at, T), int(T));
  }
  return b;
}

}  // namespace remat
