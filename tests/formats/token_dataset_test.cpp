// The data contract, checked against the formula written out by hand, for bytes and for tokens.
#include <catch2/catch.hpp>

#include <cmath>

#include "formats/token_dataset.h"

using namespace remat;

TEST_CASE("batch windows follow ((s*B + b)*T) mod (len - T - 1)") {
  std::string text;
  for (int i = 0; i < 50; ++i) text += char('a' + i % 26);
  const int T = 7, B = 3;
  const auto data = TokenDataset::from_bytes(text, T);
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
  const auto data = TokenDataset::from_bytes(text, 4);
  CHECK(data.batch(0, 1).tokens[0] == 0xF0u);
}

TEST_CASE("data too short for the sequence is refused with the minimum") {
  CHECK_THROWS_WITH(TokenDataset::from_bytes(std::string(9, 'x'), 8, "f.txt"),
                    Catch::Contains("at least 10 bytes"));
  CHECK_NOTHROW(TokenDataset::from_bytes(std::string(10, 'x'), 8));
  CHECK_THROWS_WITH(TokenDataset(std::filesystem::path("/nonexistent/file"), 8),
                    Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(TokenDataset(std::filesystem::path("/tmp"), 8),
                    Catch::Contains("is a directory"));
}

TEST_CASE("unigram entropy of the byte distribution") {
  CHECK(TokenDataset::from_bytes(std::string(100, 'a'), 4).unigram_entropy() == 0.0);
  CHECK(TokenDataset::from_bytes(std::string("abababab"), 4).unigram_entropy() ==
        Approx(std::log(2.0)));
}

TEST_CASE("token windows follow the same formula over token ids") {
  std::vector<uint32_t> tokens;
  for (uint32_t i = 0; i < 40; ++i) tokens.push_back(50000 + i * 7);
  const int T = 5, B = 2;
  const auto data = TokenDataset::from_tokens(tokens, T, "t.bin");
  const uint64_t span = tokens.size() - T - 1;
  for (uint64_t s : {0ull, 3ull, 77ull}) {
    const Batch b = data.batch(s, B);
    for (int row = 0; row < B; ++row) {
      const uint64_t start = ((s * B + row) * T) % span;
      for (int t = 0; t < T; ++t) {
        CHECK(b.tokens[row * T + t] == tokens[start + t]);
        CHECK(b.targets[row * T + t] == tokens[start + t + 1]);
      }
    }
  }
  CHECK(data.size() == 40);
  CHECK(data.unigram_entropy() == Approx(std::log(40.0)));
}

TEST_CASE("a token outside the model's vocabulary is named with its file and position") {
  const auto data = TokenDataset::from_tokens({1, 2, 3, 50257, 4, 5}, 2, "train.bin");
  CHECK_NOTHROW(data.check_vocab(50258));
  CHECK_THROWS_WITH(
      data.check_vocab(50257),
      "train.bin: token 3 is id 50257, but the model's vocabulary has 50257 ids (--vocab)");
  CHECK_THROWS_WITH(TokenDataset::from_tokens({1, 2, 3}, 2, "t.bin"),
                    Catch::Contains("3 tokens is too short"));
}
