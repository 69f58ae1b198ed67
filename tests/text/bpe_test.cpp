#include "text/bpe.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/text/small_vocab.h"

using namespace remat::text;
using remat::test::SmallVocab;

namespace {

std::vector<TokenId> encode(BpeModel& bpe, std::string_view piece) {
  std::vector<TokenId> out;
  bpe.encode(piece, out);
  return out;
}

}  // namespace

TEST_CASE("BPE merges the lowest-ranked pair first", "[text]") {
  // ids: 256 "bc", 257 "ab", 258 "abc".
  SmallVocab v(SmallVocab::Merges{{"b", "c"}, {"a", "b"}, {"ab", "c"}});
  BpeModel bpe(v.vocab, v.merges);
  CHECK(encode(bpe, "abc") == std::vector<TokenId>{'a', 256});  // "bc" (rank 0) before "ab"
  CHECK(encode(bpe, "abd") == std::vector<TokenId>{257, 'd'});
  CHECK(encode(bpe, "x") == std::vector<TokenId>{'x'});
  CHECK(encode(bpe, "") == std::vector<TokenId>{});
  CHECK(bpe.merge_count() == 3);
  CHECK(bpe.find("bc") == 256);
  CHECK(bpe.find("zz") == -1);
}

TEST_CASE("BPE merges equal ranks left to right and keeps merging the results", "[text]") {
  SmallVocab v(SmallVocab::Merges{
      {"a", "a"}, {"aa", "aa"}, {"aaaa", "a"}});  // 256 "aa", 257 "aaaa", 258 "aaaaa"
  BpeModel bpe(v.vocab, v.merges);
  CHECK(encode(bpe, "aaa") == std::vector<TokenId>{256, 'a'});
  CHECK(encode(bpe, "aaaa") == std::vector<TokenId>{257});
  CHECK(encode(bpe, "aaaaa") == std::vector<TokenId>{258});
  CHECK(encode(bpe, "aaaaaaa") == std::vector<TokenId>{257, 256, 'a'});
  // Cached results are the same as fresh ones.
  CHECK(encode(bpe, "aaaaaaa") == std::vector<TokenId>{257, 256, 'a'});
}

TEST_CASE("BPE encodes a long piece in n log n", "[text]") {
  SmallVocab v(SmallVocab::Merges{{"a", "a"}, {"aa", "aa"}});
  BpeModel bpe(v.vocab, v.merges);
  const auto ids = encode(bpe, std::string(1 << 20, 'a'));
  REQUIRE(ids.size() == (1 << 18));
  CHECK(ids.front() == 257);
  CHECK(ids.back() == 257);
}

TEST_CASE("ignore_merges takes a whole piece that is a token as is", "[text]") {
  // "abc" is a token, but the merges reach only 'a' "bc".
  SmallVocab v(SmallVocab::Merges{{"b", "c"}});
  v.vocab.emplace_back("abc", 300);
  BpeModel bpe(v.vocab, v.merges);
  CHECK(encode(bpe, "abc") == std::vector<TokenId>{'a', 256});
  bpe.set_ignore_merges(true);
  CHECK(encode(bpe, "abc") == std::vector<TokenId>{300});
}

TEST_CASE("inconsistent vocabularies and merges are refused in one line", "[text]") {
  SmallVocab v(SmallVocab::Merges{{"a", "b"}});
  auto missing_byte = v.vocab;
  missing_byte.erase(missing_byte.begin() + 0x41);
  CHECK_THROWS_WITH(BpeModel(missing_byte, v.merges),
                    "the vocabulary has no token for byte 0x41; byte-level BPE needs all 256");
  CHECK_THROWS_WITH(BpeModel(v.vocab, {{"a", "b"}, {"b", "q"}}),
                    "merge 2 ('b' 'q'): 'bq' is not in the vocabulary");
  CHECK_THROWS_WITH(BpeModel(v.vocab, {{"zz", "b"}}),
                    "merge 1 ('zz' 'b'): 'zz' is not in the vocabulary");
  auto duplicate = v.vocab;
  duplicate.emplace_back("\n\n", 256);
  CHECK_THROWS_WITH(BpeModel(duplicate, v.merges),
                    "token id 256 is given to both 'ab' and '\\x0A\\x0A'");
}
