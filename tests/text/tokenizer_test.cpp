#include "text/tokenizer.h"

#include <catch2/catch.hpp>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/text/small_vocab.h"

using namespace remat::text;
using remat::test::SmallVocab;

namespace {

Tokenizer small_tokenizer() {
  SmallVocab v(SmallVocab::Merges{
      {" ", "t"}, {"h", "e"}, {" t", "he"}, {"<", "|"}});  // 256 " t" 257 "he" 258 " the"
  auto pre = std::make_unique<PreTokenizer>();
  pre->add_isolating_stage(kGpt2Pattern);
  return Tokenizer(v.vocab, v.merges, std::move(pre),
                   {{"<|endoftext|>", 1000}, {"<|end|>", 1001}, {"<|endoftext|>x", 1002}});
}

using Ids = std::vector<TokenId>;

}  // namespace

TEST_CASE("special tokens in text become their ids, the longest winning", "[text]") {
  Tokenizer t = small_tokenizer();
  CHECK(t.vocab_size() == 1003);
  CHECK(t.encode("a<|end|> the") == Ids{'a', 1001, 258});
  CHECK(t.encode("<|endoftext|><|endoftext|>x") == Ids{1000, 1002});
  CHECK(t.encode("<|end") == Ids{259, 'e', 'n', 'd'});
  CHECK(t.special_id("<|end|>") == 1001u);
  CHECK_FALSE(t.special_id("<|nope|>").has_value());
}

TEST_CASE("with specials off, special-token text is ordinary text", "[text]") {
  Tokenizer t = small_tokenizer();
  const Ids ids = t.encode("<|end|>", false);
  CHECK(ids == Ids{259, 'e', 'n', 'd', '|', '>'});
  CHECK(t.decode(ids) == "<|end|>");
}

TEST_CASE(
    "where special tokens overlap, leftmost matching takes the first and longest-first the "
    "longer",
    "[text]") {
  SmallVocab v(SmallVocab::Merges{{"<", "|"}});  // 256 "<|"
  const std::vector<SpecialToken> specials = {
      {"<|a|>", 1000}, {"|><|b|>", 1001}, {"<|b|>", 1002}, {"x", 1003, true}};
  const auto make = [&](SpecialMatch match) {
    return Tokenizer(v.vocab, v.merges, std::make_unique<PreTokenizer>(), specials, {}, match);
  };
  Tokenizer leftmost = make(SpecialMatch::leftmost), longest = make(SpecialMatch::longest_first);
  // "<|a|>" starts first; "|><|b|>", inside it, is longer.
  CHECK(leftmost.encode("<|a|><|b|>") == Ids{1000, 1002});
  CHECK(longest.encode("<|a|><|b|>") == Ids{256, 'a', 1001});
  CHECK(longest.encode("<|a|>x<|b|>") == Ids{1000, 1003, 1002});
  CHECK(longest.encode("<|a|><|b|>", false) == leftmost.encode("<|a|><|b|>", false));
  CHECK(longest.decode(longest.encode("<|a|><|b|><|a|>")) == "<|a|><|b|><|a|>");
  // Longest-first matching is in the text as given: a token matched after normalization is
  // refused.
  CHECK_THROWS_WITH(Tokenizer(v.vocab, v.merges, std::make_unique<PreTokenizer>(),
                              {{"<|a|>", 1000, false, true}}, {}, SpecialMatch::longest_first),
                    Catch::Contains("'<|a|>' is matched after normalization"));
}

TEST_CASE("decode(encode(x)) == x for random bytes", "[text]") {
  Tokenizer t = small_tokenizer();
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string x(rng() % 300, '\0');
    for (char& c : x) c = char(rng() % 4 == 0 ? "<|> the\n"[rng() % 8] : rng() % 256);
    if (round % 10 == 0) x += "<|endoftext|>";
    CHECK(t.decode(t.encode(x)) == x);
    CHECK(t.decode(t.encode(x, false)) == x);
  }
}

TEST_CASE("decoding an id that is no token names it", "[text]") {
  Tokenizer t = small_tokenizer();
  CHECK(t.decode({'h', 1000}) == "h<|endoftext|>");
  CHECK_THROWS_WITH(t.decode({'h', 999}),
                    "token 1 is id 999, which is not in the vocabulary (1003 ids)");
  CHECK_THROWS_WITH(t.decode({5000}),
                    "token 0 is id 5000, which is not in the vocabulary (1003 ids)");
}

TEST_CASE("a special token cannot take another token's id", "[text]") {
  SmallVocab v(SmallVocab::Merges{});
  CHECK_THROWS_WITH(Tokenizer(v.vocab, v.merges, std::make_unique<PreTokenizer>(), {{"<s>", 65}}),
                    "special token '<s>' has id 65, which is already the token 'A'");
}
