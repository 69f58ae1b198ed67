// Validation rows (formats/validation_rows.h): one example a row and packed read the same
// examples, so the same trained targets; packed they take fewer rows, the rows past the packed
// ones are padding, and the rows are the same on every read.
#include "formats/validation_rows.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>
#include <vector>

#include "base/ignore_target.h"
#include "base/row_positions.h"

using namespace remat;

namespace {

constexpr int kSeq = 8;

// Example k: n tokens 100 k + 0 .. n-1, all trained but the first.
TokenExample example(uint32_t k, std::size_t n) {
  TokenExample e;
  for (std::size_t i = 0; i < n; ++i) e.ids.push_back(100 * k + uint32_t(i));
  e.mask.assign(n, 1);
  e.mask[0] = 0;
  e.line = k + 1;
  return e;
}

ExampleRows held_out(const std::vector<std::size_t>& lengths) {
  std::vector<TokenExample> examples;
  for (std::size_t k = 0; k < lengths.size(); ++k)
    examples.push_back(example(uint32_t(k), lengths[k]));
  return ExampleRows(std::move(examples), kSeq, 7, "val.jsonl");
}

// Every trained target of every evaluated batch as (input token, target, position in its
// example), sorted: what a mean over the trained targets averages.
std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> targets(const ValidationRows& v) {
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> out;
  for (int k = 0; k < v.batches(); ++k) {
    const Batch b = v.batch(k);
    for (std::size_t i = 0; i < b.targets.size(); ++i) {
      if (b.targets[i] == kIgnoreTarget) continue;
      const uint32_t position = b.positions.empty() ? uint32_t(i % kSeq) : b.positions[i];
      out.emplace_back(b.tokens[i], b.targets[i], position);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("packed validation rows read the targets of one example a row, in fewer batches") {
  // 7 examples, B = 2: one example a row evaluates 3 batches, examples 0 .. 5.
  const ExampleRows file = held_out({3, 5, 2, 9, 4, 3, 6});
  const ValidationRows plain(file, 2, 8, false), packed(file, 2, 8, true);
  REQUIRE(plain.batches() == 3);
  REQUIRE(plain.rows() == 6);
  REQUIRE(plain.examples() == 6);
  REQUIRE_FALSE(plain.packed());
  REQUIRE(packed.packed());
  REQUIRE(packed.examples() == 6);
  // Fills 2, 4, 1, 8 (a whole row), 3, 2 of 8 positions: rows {2,4,1}, {8}, {3,2}.
  REQUIRE(packed.rows() == 3);
  REQUIRE(packed.batches() == 2);
  REQUIRE(packed.trained_targets() == plain.trained_targets());
  REQUIRE(plain.trained_targets() == 2 + 4 + 1 + 8 + 3 + 2);
  const auto t = targets(plain);
  REQUIRE(t.size() == plain.trained_targets());
  REQUIRE(targets(packed) == t);
  // Example 6 is read by neither.
  for (const auto& [input, target, position] : t) REQUIRE(target / 100 != 6);
}

TEST_CASE("rows past the packed ones are padding, and a packed batch's positions are valid") {
  const ExampleRows file = held_out({3, 5, 2, 9, 4, 3, 6});
  const ValidationRows packed(file, 2, 8, true);
  const Batch last = packed.batch(1);  // rows 2 (packed) and 3 (padding)
  REQUIRE(row_positions_error(last.positions, kSeq).empty());
  for (int t = 0; t < kSeq; ++t) {
    CHECK(last.tokens[kSeq + t] == 7);
    CHECK(last.targets[kSeq + t] == kIgnoreTarget);
    CHECK(last.positions[kSeq + t] == uint32_t(t));
  }
  CHECK(last.targets[0] != kIgnoreTarget);
  REQUIRE_THROWS_AS(packed.batch(2), std::out_of_range);
  REQUIRE_THROWS_AS(packed.batch(-1), std::out_of_range);
}

TEST_CASE("validation rows take at most max_batches, repeat a short file, and read alike twice") {
  const ExampleRows file = held_out({3, 5, 2, 9, 4, 3, 6});
  const ValidationRows one(file, 2, 1, true);
  REQUIRE(one.examples() == 2);
  REQUIRE(one.rows() == 1);
  REQUIRE(targets(one) == targets(ValidationRows(file, 2, 1, false)));
  // Fewer examples than B: one batch, examples 0, 1, 2, 0, as one example a row reads them.
  const ExampleRows small = held_out({3, 5, 2});
  const ValidationRows plain(small, 4, 8, false), packed(small, 4, 8, true);
  REQUIRE(plain.examples() == 4);
  REQUIRE(packed.examples() == 4);
  REQUIRE(packed.trained_targets() == 2 + 4 + 1 + 2);
  REQUIRE(targets(packed) == targets(plain));
  // Deterministic: the same rows on every construction.
  const ValidationRows again(small, 4, 8, true);
  REQUIRE(again.batch(0).tokens == packed.batch(0).tokens);
  REQUIRE(again.batch(0).positions == packed.batch(0).positions);
  REQUIRE_THROWS_AS(ValidationRows(small, 0, 8, true), std::invalid_argument);
  REQUIRE_THROWS_AS(ValidationRows(small, 2, 0, false), std::invalid_argument);
}
