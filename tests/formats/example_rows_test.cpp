// Fine-tuning rows: cutting, padding and dropping examples, targets that are kIgnoreTarget where
// nothing is trained, and which example row k reads, with and without a shuffle seed.
#include "formats/example_rows.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <vector>

#include "base/ignore_target.h"

using namespace remat;

namespace {

constexpr uint32_t kIgnore = kIgnoreTarget;
constexpr uint32_t kPad = 99;

TokenExample example(std::vector<uint32_t> ids, std::vector<uint8_t> mask, std::size_t line) {
  return {std::move(ids), std::move(mask), line};
}

}  // namespace

TEST_CASE("examples are cut to T+1 tokens, padded, and dropped with nothing left to train") {
  const int T = 4;
  std::vector<TokenExample> examples = {
      example({1, 2, 3}, {0, 1, 1}, 1),                                 // short: padded
      example({10, 11, 12, 13, 14, 15, 16}, {1, 0, 0, 0, 1, 1, 1}, 2),  // cut to 10..14
      example({20, 21, 22, 23, 24, 25}, {1, 1, 1, 1, 1, 1}, 4),         // cut to 20..24
      example({30, 31, 32, 33, 34, 35}, {1, 0, 0, 0, 0, 1}, 5),  // cut: nothing left, dropped
      example({40}, {1}, 6),         // token 0 is nobody's target: dropped
      example({50, 51}, {1, 0}, 7),  // dropped
  };
  const ExampleRows rows(examples, T, kPad, "ft.jsonl");
  const ExampleRowsReport& r = rows.report();
  CHECK(r.examples == 6);
  CHECK(r.cut == 3);
  CHECK(r.dropped == 3);
  CHECK(r.first_dropped_line == 5);
  REQUIRE(rows.size() == 3);
  CHECK(r.trained_targets == 2 + 1 + 4);
  CHECK(r.tokens == 3 + 5 + 5);
  const Batch b = rows.batch(0, 3);
  CHECK(b.tokens == std::vector<uint32_t>{1, 2, 3, kPad, 10, 11, 12, 13, 20, 21, 22, 23});
  CHECK(b.targets == std::vector<uint32_t>{2, 3, kIgnore, kIgnore,         //
                                           kIgnore, kIgnore, kIgnore, 14,  //
                                           21, 22, 23, 24});
}

TEST_CASE("row k reads example k mod n: batch i is rows i*B .. i*B+B-1") {
  std::vector<TokenExample> examples;
  for (uint32_t i = 0; i < 5; ++i) examples.push_back(example({i, 100 + i}, {0, 1}, i + 1));
  const ExampleRows rows(examples, 3, kPad, "f");
  for (uint64_t index : {0ull, 1ull, 7ull, 1000001ull}) {
    const Batch b = rows.batch(index, 2);
    for (uint64_t row = 0; row < 2; ++row) {
      const uint64_t k = index * 2 + row;
      CHECK(rows.example_of_row(k) == k % 5);
      CHECK(b.tokens[row * 3] == k % 5);
      CHECK(b.targets[row * 3] == 100 + k % 5);
    }
  }
}

TEST_CASE("a shuffle seed permutes each epoch, as a function of the seed and the epoch alone") {
  std::vector<TokenExample> examples;
  const std::size_t n = 7;
  for (uint32_t i = 0; i < n; ++i) examples.push_back(example({i, i}, {1, 1}, i + 1));
  const ExampleRows a(examples, 2, kPad, "f", 42), again(examples, 2, kPad, "f", 42);
  const ExampleRows other(examples, 2, kPad, "f", 43);
  std::vector<std::vector<std::size_t>> epochs;
  for (uint64_t e = 0; e < 4; ++e) {
    std::vector<std::size_t> order;
    for (uint64_t j = 0; j < n; ++j) order.push_back(a.example_of_row(e * n + j));
    std::vector<std::size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::size_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    CHECK(sorted == all);  // every example once per epoch
    epochs.push_back(order);
  }
  CHECK(std::set<std::vector<std::size_t>>(epochs.begin(), epochs.end()).size() > 1);
  bool differs = false;
  for (uint64_t k = 0; k < 4 * n; ++k) {
    CHECK(a.example_of_row(k) == again.example_of_row(k));
    differs |= a.example_of_row(k) != other.example_of_row(k);
  }
  CHECK(differs);
  // A batch that spans two epochs reads each row from its own epoch's order.
  const Batch b = a.batch(1, 5);  // rows 5..9: epoch 0 then epoch 1
  for (uint64_t row = 0; row < 5; ++row) CHECK(b.tokens[row * 2] == a.example_of_row(5 + row));
}

TEST_CASE("rows refuse data with nothing to train and ids beyond the vocabulary") {
  CHECK_THROWS_WITH(ExampleRows({example({1, 2}, {1, 0}, 3)}, 4, kPad, "ft.jsonl"),
                    "ft.jsonl: none of its 1 examples has a trained token within --seq 4 + 1 "
                    "tokens");
  const ExampleRows rows({example({1, 2}, {1, 1}, 1), example({3, 700}, {1, 1}, 9)}, 4, kPad,
                         "ft.jsonl");
  CHECK_NOTHROW(rows.check_vocab(701));
  CHECK_THROWS_WITH(rows.check_vocab(700),
                    "ft.jsonl: line 9: token 1 is id 700, but the model's vocabulary has 700 ids "
                    "(--vocab)");
  CHECK(rows.unigram_entropy() == Approx(std::log(2.0)));
}
