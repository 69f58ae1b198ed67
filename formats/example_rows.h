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
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

class ExampleRows {
 public:
  // `seq` is T; `pad` the input id of padded positions. Throws std::invalid_argument naming
  // `origin` when no example is left.
  ExampleRows(std::vector<TokenExample> examples, int seq, uint32_t pad, std::string origin,
              std::optional<uint64_t> shuffle_seed = std::nullopt);

  // Rows index*batch_size .. index*batch_size + batch_size - 1.
  Batch batch(uint64_t index, int batch_size) const;
  // The kept example that row k reads (an index into the kept examples, in file order).
  std::size_t example_of_row(uint64_t k) const;

  std::size_t size() const { return examples_.size(); }
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

  std::vector<TokenExample> examples_;
  int seq_;
  uint32_t pad_;
  std::string origin_;
  std::optional<uint64_t> shuffle_seed_;
  ExampleRowsReport report_;
};

}  // namespace remat
