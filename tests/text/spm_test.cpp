// SentencePiece as llama.cpp runs it (text/spm.h) on a vocabulary small enough to follow by hand:
// merges by score, not by id; ties to the leftmost pair; the space prefix and "▁"; byte fallback
// after merging; invalid UTF-8 cut by lead byte; and decoding.
#include "text/spm.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "text/bpe_symbols.h"

using namespace remat::text;
using Ids = std::vector<TokenId>;

namespace {

constexpr TokenId kByte0 = 3;  // <0x00>; byte b is kByte0 + b
constexpr TokenId kSpace = 259, kA = 260, kB = 261, kC = 262, kAB = 263, kBC = 264, kSpaceA = 265,
                  kAA = 266, kE = 267, kUnused = 268;

// <unk>, <s>, </s>, the 256 byte tokens, then pieces whose scores are not in id order: "bc" is
// added after "ab" but scores higher.
std::vector<SpmPiece> pieces(bool with_bytes = true) {
  std::vector<SpmPiece> p = {{"<unk>", 0, LlamaTokenType::unknown},
                             {"<s>", 0, LlamaTokenType::control},
                             {"</s>", 0, LlamaTokenType::control}};
  for (int b = 0; b < 256; ++b)
    p.push_back(
        {with_bytes ? byte_fallback_token(uint8_t(b)) : "[no byte " + std::to_string(b) + "]", 0,
         LlamaTokenType::byte});
  for (const SpmPiece& s : std::vector<SpmPiece>{{"\u2581", -1},
                                                 {"a", -2},
                                                 {"b", -3},
                                                 {"c", -4},
                                                 {"ab", -10},
                                                 {"bc", -5},
                                                 {"\u2581a", -6},
                                                 {"aa", -7},
                                                 {"\u00e9", -8},
                                                 {"cc", -9, LlamaTokenType::unused}})
    p.push_back(s);
  return p;
}

Ids encode(const SpmModel& m, const std::string& text) {
  Ids out;
  m.encode(text, out);
  return out;
}

}  // namespace

TEST_CASE("SentencePiece: the pair whose token scores highest merges first, the leftmost on ties") {
  const SpmModel m(pieces(), false);
  // "bc" scores -5, "ab" -10: b joins c although "ab" comes first in the text and in the ids.
  CHECK(encode(m, "abc") == Ids{kA, kBC});
  CHECK(encode(m, "ab") == Ids{kAB});
  // "aa" at 0 and at 1 score alike: the leftmost merges.
  CHECK(encode(m, "aaa") == Ids{kAA, kA});
  CHECK(encode(m, "aaaa") == Ids{kAA, kAA});
  CHECK(encode(m, "") == Ids{});
}

TEST_CASE("SentencePiece: spaces are \u2581, with one before the text when add_space_prefix") {
  const SpmModel prefixed(pieces(), true), plain(pieces(), false);
  CHECK(encode(prefixed, "a b") == Ids{kSpaceA, kSpace, kB});
  CHECK(encode(plain, "a b") == Ids{kA, kSpace, kB});
  CHECK(encode(plain, " a") == Ids{kSpaceA});
  CHECK(encode(prefixed, " a") == Ids{kSpace, kSpaceA});
}

TEST_CASE(
    "SentencePiece: a piece that is no token becomes byte tokens, invalid UTF-8 cut by lead byte") {
  const SpmModel m(pieces(), false);
  // "é" is a token, "z" and "ü" are not.
  CHECK(encode(m, "a\u00e9 z") == Ids{kA, kE, kSpace, kByte0 + 'z'});
  CHECK(encode(m, "\u00fc") == Ids{kByte0 + 0xC3, kByte0 + 0xBC});
  // 0xC3 takes the byte after it whatever it is: "\xC3a" is one piece, no token, so "a" cannot
  // join "b" into "ab".
  CHECK(encode(m,
               "\xC3"
               "ab") == Ids{kByte0 + 0xC3, kByte0 + 'a', kB});
  // A continuation byte alone is one piece; a lead byte at the end takes what is left.
  CHECK(encode(m,
               "\x80"
               "ab\xF0") == Ids{kByte0 + 0x80, kAB, kByte0 + 0xF0});
  // An unused token is a token too: merging makes it (llama.cpp looks at the text alone).
  CHECK(encode(m, "cc") == Ids{kUnused});
  const SpmModel no_bytes(pieces(false), false);
  CHECK(encode(no_bytes, "abc") == Ids{kA, kBC});
  CHECK_THROWS_WITH(encode(no_bytes, "z"),
                    "the text needs byte 0x7A as a token, but the vocabulary has neither <0x7A> "
                    "nor the byte itself");
}

TEST_CASE("SentencePiece: decoding gives llama.cpp's text for each kind of token") {
  const SpmModel prefixed(pieces(), true), plain(pieces(), false);
  // The first token's leading space goes with add_space_prefix; later ones stay.
  CHECK(prefixed.decode({kSpaceA, kSpace, kB}, nullptr) == "a b");
  CHECK(plain.decode({kSpaceA, kSpace, kB}, nullptr) == " a b");
  // Only the very first token loses it, even when that token is a control token.
  CHECK(prefixed.decode({1, kSpaceA}, nullptr) == "<s> a");
  // Byte tokens give their bytes, unknown and control tokens their text, unused ones nothing.
  CHECK(plain.decode({kByte0 + 0xC3, kByte0 + 0xA9, 0, 2, kUnused, kC}, nullptr) ==
        "\u00e9<unk></s>c");
  std::vector<std::size_t> starts;
  CHECK(plain.decode({kAB, kSpaceA, 1, kC}, &starts) == "ab a<s>c");
  CHECK(starts == std::vector<std::size_t>{0, 2, 4, 7});
  // Round trip of text with no "\u2581" of its own.
  const std::string text = "ab\xC3\xA9 zz  bca\xFF";
  CHECK(plain.decode(encode(plain, text), nullptr) == text);
  CHECK(prefixed.decode(encode(prefixed, text), nullptr) == text);
}

TEST_CASE("SentencePiece: where each token begins in the text encoded") {
  const SpmModel prefixed(pieces(), true);
  Ids ids;
  std::vector<std::size_t> starts;
  // The prefix's space belongs to the first token; each "▁" comes from one space.
  prefixed.encode("a b\u00fc", ids, &starts);
  CHECK(ids == Ids{kSpaceA, kSpace, kB, kByte0 + 0xC3, kByte0 + 0xBC});
  CHECK(starts == std::vector<std::size_t>{0, 1, 2, 3, 4});
}

TEST_CASE("SentencePiece: two pieces with one text are refused") {
  std::vector<SpmPiece> p = pieces();
  p.push_back({"ab", 0});
  CHECK_THROWS_WITH(SpmModel(std::move(p), true), "tokens 263 and 269 are both 'ab'");
}
