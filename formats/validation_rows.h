// The rows a validation loss reads from held-out fine-tuning examples (formats/example_rows.h),
// one example a row or packed several to a row, so that both evaluate the same targets.
//
// One example a row, the evaluated rows are the first `batches` batches of B rows, row k holding
// example k mod n in file order (never shuffled), where batches = min(max_batches, max(1, n div
// B)): every example once when n is a multiple of B and max_batches allows, a file of fewer than
// B examples repeats some. Packed, the same examples in the same order (repeats included) are
// packed first fit into rows (formats/example_packing.h), and the evaluated batches are those
// that hold them: ceil(rows / B), the last one's rows past the packed ones all padding with
// ignored targets. So both read the same multiset of trained targets, and a loss that is the
// mean over every trained target (not a mean of batch means) is the same number up to the order
// of its float sums.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/example_rows.h"
#include "formats/token_dataset.h"

namespace remat {

class ValidationRows {
 public:
  // `held_out`: the file's examples (cut and filtered, unshuffled); its packing is ignored and
  // `pack` decides. Throws std::invalid_argument for batch or max_batches below 1.
  ValidationRows(const ExampleRows& held_out, int batch, int max_batches, bool pack);

  // Batch k < batches() of the evaluated rows (with positions when packed).
  Batch batch(int k) const;
  int batches() const { return batches_; }
  // Rows that hold examples: batches() · B one example a row, the packed rows else.
  uint64_t rows() const { return rows_; }
  // The examples evaluated (repeats counted), and their trained targets.
  std::size_t examples() const { return evaluated_.size(); }
  uint64_t trained_targets() const { return evaluated_.report().trained_targets; }
  bool packed() const { return evaluated_.packed(); }

 private:
  ExampleRows evaluated_;  // exactly the evaluated examples, in order
  int batch_;
  uint64_t rows_;
  int batches_;
};

}  // namespace remat
