// Packing examples several to a row: first fit in pass order (formats/example_packing.h), the
// rows' tokens, targets and positions (formats/example_rows.h), passes that never share a row,
// shuffled passes found again from the row index alone, and the fill report.
#include "formats/example_packing.h"

#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "base/ignore_target.h"
#include "base/row_positions.h"
#include "formats/example_rows.h"

using namespace remat;

namespace {

constexpr uint32_t kIgnore = kIgnoreTarget;
constexpr uint32_t kPad = 99;

// An example of n tokens 100 k + 0 .. n-1, all trained but the first.
TokenExample example(uint32_t k, std::size_t n) {
  TokenExample e;
  for (std::size_t i = 0; i < n; ++i) e.ids.push_back(100 * k + uint32_t(i));
  e.mask.assign(n, 1);
  e.mask[0] = 0;
  e.line = k + 1;
  return e;
}

std::vector<std::size_t> indices(const PackedRow& r) {
  return r.examples;
}

}  // namespace

TEST_CASE("first fit puts each example in the lowest row with room, else a new row") {
  const std::vector<int> lengths = {5, 4, 3, 6, 2, 1, 4};
  const std::vector<PackedRow> rows = pack_first_fit(lengths, 8);
  // 5 -> row 0 (3 left); 4 -> row 1 (4 left); 3 -> row 0 (full); 6 -> row 2 (2 left);
  // 2 -> row 1 (2 left); 1 -> row 1 (1 left); 4 -> row 3.
  REQUIRE(rows.size() == 4);
  CHECK(indices(rows[0]) == std::vector<std::size_t>{0, 2});
  CHECK(indices(rows[1]) == std::vector<std::size_t>{1, 4, 5});
  CHECK(indices(rows[2]) == std::vector<std::size_t>{3});
  CHECK(indices(rows[3]) == std::vector<std::size_t>{6});
  CHECK(rows[0].used == 8);
  CHECK(rows[1].used == 7);
  REQUIRE_THROWS_AS(pack_first_fit(std::vector<int>{9}, 8), std::invalid_argument);
  REQUIRE_THROWS_AS(pack_first_fit(std::vector<int>{0}, 8), std::invalid_argument);
}

TEST_CASE("a packed row holds its examples' inputs and targets, positions restarting at 0") {
  // T = 6: example 0 (4 tokens) fills 3 positions, example 1 (3 tokens) 2, example 2 (8 tokens,
  // cut to 7) a whole row, example 3 (2 tokens, its first untrained) 1.
  std::vector<TokenExample> examples = {example(0, 4), example(1, 3), example(2, 8), example(3, 2)};
  examples[1].mask = {1, 0, 1};  // its middle token is untrained
  const ExampleRows rows(examples, 6, kPad, "ft.jsonl", std::nullopt, true);
  REQUIRE(rows.packing().packed_rows == 2);
  const Batch b = rows.batch(0, 2);
  CHECK(b.tokens == std::vector<uint32_t>{0, 1, 2, 100, 101, 300,  //
                                          200, 201, 202, 203, 204, 205});
  CHECK(b.targets == std::vector<uint32_t>{1, 2, 3, kIgnore, 102, 301,  //
                                           201, 202, 203, 204, 205, 206});
  CHECK(b.positions == std::vector<uint32_t>{0, 1, 2, 0, 1, 0, 0, 1, 2, 3, 4, 5});
  CHECK(row_positions_error(b.positions, 6).empty());
  // Padding: positions restart at 0 with pad inputs and nothing trained.
  const ExampleRows short_rows({example(0, 3)}, 6, kPad, "f", std::nullopt, true);
  const Batch p = short_rows.batch(0, 1);
  CHECK(p.tokens == std::vector<uint32_t>{0, 1, kPad, kPad, kPad, kPad});
  CHECK(p.targets == std::vector<uint32_t>{1, 2, kIgnore, kIgnore, kIgnore, kIgnore});
  CHECK(p.positions == std::vector<uint32_t>{0, 1, 0, 1, 2, 3});
}

TEST_CASE("packed passes never share a row, and every pass trains each example once") {
  std::vector<TokenExample> examples;
  for (uint32_t k = 0; k < 9; ++k) examples.push_back(example(k, 2 + (k * 5) % 7));
  for (std::optional<uint64_t> seed : {std::optional<uint64_t>{}, std::optional<uint64_t>{7}}) {
    const ExampleRows rows(examples, 8, kPad, "f", seed, true);
    std::map<uint64_t, std::vector<int>> seen;  // pass -> times each example was read
    for (uint64_t k = 0; k < 40; ++k) {
      const uint64_t pass = rows.pass_of_row(k);
      auto& count = seen[pass];
      count.resize(9, 0);
      for (std::size_t e : rows.examples_of_row(k)) ++count[e];
    }
    seen.erase(std::prev(seen.end()));  // the last pass may be partly read
    REQUIRE(seen.size() >= 3);
    for (const auto& [pass, count] : seen) CHECK(count == std::vector<int>(9, 1));
  }
}

TEST_CASE("shuffled packed rows are found again from the row index alone") {
  std::vector<TokenExample> examples;
  for (uint32_t k = 0; k < 13; ++k) examples.push_back(example(k, 2 + (k * 3) % 9));
  const ExampleRows a(examples, 9, kPad, "f", 5, true), b(examples, 9, kPad, "f", 5, true);
  // Read a forwards and b from the far end backwards: the same rows, as a resumed run needs.
  std::vector<Batch> forwards, backwards;
  for (uint64_t i = 0; i < 30; ++i) forwards.push_back(a.batch(i, 3));
  for (uint64_t i = 30; i-- > 0;) backwards.push_back(b.batch(i, 3));
  for (uint64_t i = 0; i < 30; ++i) {
    CHECK(forwards[i].tokens == backwards[29 - i].tokens);
    CHECK(forwards[i].positions == backwards[29 - i].positions);
  }
  // Different passes pack differently: the order matters.
  CHECK(a.examples_of_row(0) != a.examples_of_row(a.packing().packed_rows));
}

TEST_CASE("the packing report counts filled positions, rows and padding") {
  const ExampleRows rows({example(0, 4), example(1, 3), example(2, 8), example(3, 2)}, 6, kPad, "f",
                         std::nullopt, true);
  const PackingReport& r = rows.packing();
  CHECK(r.filled == 3 + 2 + 6 + 1);
  CHECK(r.plain_rows == 4);
  CHECK(r.packed_rows == 2);
  CHECK(r.plain_padding() == Approx(1.0 - 12.0 / 24.0));
  CHECK(r.packed_padding() == Approx(0.0));
  const ExampleRows plain({example(0, 4)}, 6, kPad, "f");
  CHECK_FALSE(plain.packed());
  CHECK(plain.batch(0, 1).positions.empty());
  REQUIRE_THROWS_AS(rows.example_of_row(0), std::logic_error);
}
