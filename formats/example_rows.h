// Fine-tuning rows: one example (token ids with a loss mask, text/chat_examples.h) per row,
// instead of TokenDataset's windows over one long stream.
//
// An example of more than T+1 tokens is cut to its first T+1; a shorter one is padded. Row
// position t reads token t and targets token t+1 when that token is trained; every other target
// (untrained tokens, padding) is kIgnoreTarget (base/ignore_target.h), and padded inputs are the
// pad id. An example left with no trained target is dropped. Row k (counted across micro-batches,
// then steps: step s, micro-batch m, row b is k = (s*accum + m)*B + b) is example k mod n in
// file order, so a resumed run needs only its step count. With a shuffle seed, epoch e = k div n
// reads the examples in a permutation that depends only on the seed and e: Fisher-Yates over
// 0..n-1, for i from n-1 down to 1 swapping i with next() mod (i+1), where next() is SplitMix64
// started at seed + (e+1) * 0x9E3779B97F4A7C15.
//
// Packed (`pack`): rows hold several examples each, first fit within one pass over the examples
// (formats/example_packing.h spells the rule out); pass e reads the examples in file order, or in
// the permutation above for epoch e. Row k is row k of the passes' rows laid end to end. A packed
// batch also carries each token's position in its example (base/row_positions.h); padding after
// the last example is positions 0, 1, ... with pad inputs and ignored targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "formats/example_packing.h"
#include "formats/token_dataset.h"

namespace remat {

struct TokenExample {
  std::vector<uint32_t> ids;
  std::vector<uint8_t> mask;  // per token: 1 when it is trained
  std::size_t line = 0;       // where the example is in its file, for reports
};

struct ExampleRowsReport {
  std::size_t examples = 0;            // given
  std::size_t cut = 0;                 // longer than T+1 tokens
  std::size_t dropped = 0;             // no trained target left after cutting
  std::size_t first_dropped_line = 0;  // 0 when none is dropped
  uint64_t trained_targets = 0;        // over the kept examples, once each
  uint64_t tokens = 0;                 // of the kept examples after cutting
};

// How full the rows of one pass over the examples are, one example a row and packed. A row
// position is filled when it holds an example's input whose target is that example's next token
// (an example of L tokens fills L - 1); the rest is padding.
struct PackingReport {
  uint64_t filled = 0;       // positions over one pass
  uint64_t plain_rows = 0;   // one example a row: the kept examples
  uint64_t packed_rows = 0;  // packed, first pass (also when not packing: what it would give)
  double plain_padding() const { return padding(plain_rows); }
  double packed_padding() const { return padding(packed_rows); }
  int seq = 0;

 private:
  double padding(uint64_t rows) const {
    return rows ? 1.0 - double(filled) / (double(rows) * seq) : 0.0;
  }
};

// One example as row `tokens`/`targets` (T = `seq` positions each, already filled with the pad
// id and kIgnoreTarget): position t reads token t and targets token t+1 when that token is
// trained, for t < T, so an example longer than T+1 tokens is cut there.
void fill_example_row(const TokenExample& example, int seq, uint32_t* tokens, uint32_t* targets);

// The targets such a row trains: tokens 1..T whose mask is set.
uint64_t trained_targets_within(const TokenExample& example, int seq);

class ExampleRows {
 public:
  // `seq` is T; `pad` the input id of padded positions. Throws std::invalid_argument naming
  // `origin` when no example is left.
  ExampleRows(std::vector<TokenExample> examples, int seq, uint32_t pad, std::string origin,
              std::optional<uint64_t> shuffle_seed = std::nullopt, bool pack = false);

  // Rows index*batch_size .. index*batch_size + batch_size - 1 (with positions when packed).
  Batch batch(uint64_t index, int batch_size) const;
  // The kept example that row k reads (an index into the kept examples, in file order); rows
  // that are not packed only.
  std::size_t example_of_row(uint64_t k) const;
  // The kept examples row k holds, in order (one unless packed).
  std::vector<std::size_t> examples_of_row(uint64_t k) const;

  bool packed() const { return pack_; }
  // Rows, fill and padding of one pass, one example a row and packed (the first pass's packing).
  const PackingReport& packing() const { return packing_; }
  // Which pass over the examples row k belongs to (its epoch).
  uint64_t pass_of_row(uint64_t k) const;

  std::size_t size() const { return examples_.size(); }
  int seq() const { return seq_; }
  uint32_t pad() const { return pad_; }
  std::optional<uint64_t> shuffle_seed() const { return shuffle_seed_; }
  const TokenExample& example(std::size_t i) const { return examples_[i]; }
  const ExampleRowsReport& report() const { return report_; }
  const std::string& origin() const { return origin_; }
  // Shannon entropy (nats) of the trained targets: the loss a unigram model reaches on them.
  double unigram_entropy() const;
  // Throws std::invalid_argument naming the origin, the example's line and the id of the first
  // token that is not below `vocab`.
  void check_vocab(std::size_t vocab) const;

 private:
  std::vector<std::size_t> permutation(uint64_t epoch) const;
  std::vector<std::size_t> pass_order(uint64_t pass) const;
  // Packed: the rows of pass `pass` (cached), and where row k lies: its pass and index there.
  const std::vector<PackedRow>& pass_rows(uint64_t pass) const;
  std::pair<uint64_t, std::size_t> locate(uint64_t k) const;
  void fill_packed_row(uint64_t k, uint32_t* tokens, uint32_t* targets, uint32_t* positions) const;

  std::vector<TokenExample> examples_;
  int seq_;
  uint32_t pad_;
  std::string origin_;
  std::optional<uint64_t> shuffle_seed_;
  bool pack_ = false;
  ExampleRowsReport report_;
  PackingReport packing_;
  // Packed: the rows of recently read passes, and the first row of passes 0, 1, ... (shuffled
  // passes pack to different row counts); filled as rows are asked for.
  mutable std::map<uint64_t, std::vector<PackedRow>> pass_rows_;
  mutable std::vector<uint64_t> pass_starts_;
};

}  // namespace remat
