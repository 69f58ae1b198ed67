// The first symbols of character-level BPE: known characters, byte fallback, unk (fused or not),
// and what happens where byte tokens are missing, as Hugging Face's BPE model makes them.
#include "text/bpe_symbols.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace remat::text;

namespace {

// ids: 0 <unk>, 1..256 the byte tokens <0x00>..<0xFF>, 257 "a", 258 "\u2581", 259 "\u4e2d".
std::vector<std::pair<std::string, TokenId>> vocab(bool all_bytes = true) {
  std::vector<std::pair<std::string, TokenId>> v = {{"<unk>", 0}};
  for (int b = 0; b < 256; ++b)
    if (all_bytes || b != 0xF0) v.emplace_back(byte_fallback_token(uint8_t(b)), TokenId(b + 1));
  v.emplace_back("a", 257);
  v.emplace_back("\u2581", 258);
  v.emplace_back("\u4e2d", 259);
  return v;
}

std::vector<TokenId> split(const CharacterSymbols& s, std::string_view piece) {
  std::vector<TokenId> out;
  s.split(piece, out);
  return out;
}

}  // namespace

TEST_CASE("byte tokens are spelled <0xXX> with uppercase hex", "[text]") {
  CHECK(byte_fallback_token(0) == "<0x00>");
  CHECK(byte_fallback_token(0xAB) == "<0xAB>");
  CHECK(byte_fallback_token('A') == "<0x41>");
}

TEST_CASE("known characters are their tokens, unknown ones fall back to their bytes", "[text]") {
  const CharacterSymbols s(vocab(), true, "<unk>", true);
  CHECK(split(s, "a\u2581\u4e2d") == std::vector<TokenId>{257, 258, 259});
  // "b" and "\u6587" (E6 96 87) are no tokens.
  CHECK(split(s, "ab\u6587") == std::vector<TokenId>{257, 'b' + 1, 0xE6 + 1, 0x96 + 1, 0x87 + 1});
  // A byte that is not UTF-8 is a character of its own that no token spells.
  CHECK(split(s, "a\xFF") == std::vector<TokenId>{257, 0xFF + 1});
}

TEST_CASE("without byte fallback unknown characters are unk, fused only with fuse_unk", "[text]") {
  const CharacterSymbols fused(vocab(), false, "<unk>", true);
  CHECK(split(fused, "bcad") == std::vector<TokenId>{0, 257, 0});
  const CharacterSymbols apart(vocab(), false, "<unk>", false);
  CHECK(split(apart, "bcad") == std::vector<TokenId>{0, 0, 257, 0});
  const CharacterSymbols no_unk(vocab(), false, std::nullopt, false);
  CHECK(split(no_unk, "bcad") == std::vector<TokenId>{257});
}

TEST_CASE("a character whose byte tokens are missing is unk", "[text]") {
  // <0xF0> is missing: the emoji F0 9F 98 80 cannot fall back, "b" can.
  const CharacterSymbols s(vocab(false), true, "<unk>", true);
  CHECK(split(s, "\U0001F600\U0001F600b") == std::vector<TokenId>{0, 'b' + 1});
  CHECK_THROWS_WITH(CharacterSymbols(vocab(), true, "<nope>", false),
                    "the unk token '<nope>' is not in the vocabulary");
}
