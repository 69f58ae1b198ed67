// The data contract, checked against the formula written out by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/byte_dataset.h"

using namespace remat;

TEST_CASE("batch windows follow ((s*B + b)*T) mod (len - T - 1)") {
  std::string text;
  for (int i = 0; i < 50; ++i) text += char('a' + i % 26);
  const int T = 7, B = 3;
  const auto data = ByteDataset::from_bytes(text, T);
  const uint64_t span = text.size() - T - 1;  // 42
  for (uint64_t s : {0ull, 1ull, 5ull, 1000ull}) {
    Batch b = data.batch(s, B);
    REQUIRE(b.tokens.size() == size_t(B * T));
    for (int row = 0; row < B; ++row) {
      const uint64_t start = ((s * B + row) * T) % span;
      for (int t = 0; t < T; ++t) {
        CHECK(b.tokens[row * T + t] == uint32_t((unsigned char)text[start + t]));
        CHECK(b.targets[row * T + t] == uint32_t((unsigned char)text[start + t + 1]));
      }
    }
  }
}

TEST_CASE("bytes above 127 are tokens 128..255, not negative") {
  std::string text(20, '\xF0');
  const auto data = ByteDataset::from_bytes(text, 4);
  CHECK(data.batch(0, 1).tokens[0] == 0xF0u);
}

TEST_CASE("data too short for the sequence is refused with the minimum") {
  CHECK_THROWS_WITH(ByteDataset::from_bytes(std::string(9, 'x'), 8, "f.txt"), Catch::Contains("at least 10 bytes"));
  CHECK_NOTHROW(ByteDataset::from_bytes(std::string(10, 'x'), 8));
  CHECK_THROWS_WITH(ByteDataset(std::filesystem::path("/nonexistent/file"), 8), Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(ByteDataset(std::filesystem::path("/tmp"), 8), Catch::Contains("is a directory"));
}

TEST_CASE("unigram entropy of the byte distribution") {
  CHECK(ByteDataset::from_bytes(std::string(100, 'a'), 4).unigram_entropy() == 0.0);
  CHECK(ByteDataset::from_bytes(std::string("abababab"), 4).unigram_entropy() == Approx(std::log(2.0)));
}
