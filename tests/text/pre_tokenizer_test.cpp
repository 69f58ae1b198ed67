#include "text/pre_tokenizer.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace remat::text;

namespace {

std::vector<std::string> pieces(PreTokenizer& pre, std::string_view text) {
  std::vector<std::string> out;
  pre.split(text, [&](std::string_view p) { out.emplace_back(p); });
  return out;
}

std::vector<std::string> gpt2_pieces(std::string_view text) {
  PreTokenizer pre;
  pre.add_isolating_stage(kGpt2Pattern);
  return pieces(pre, text);
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("GPT-2's pattern splits words, numbers, punctuation and whitespace", "[text]") {
  CHECK(gpt2_pieces("Hello world, it's 2024!") ==
        V{"Hello", " world", ",", " it", "'s", " 2024", "!"});
  // Whitespace before a word is left to the word except one space: `\s+(?!\S)`.
  CHECK(gpt2_pieces("a   b\n\nc  ") == V{"a", "  ", " b", "\n", "\n", "c", "  "});
  CHECK(gpt2_pieces("I'm we'll they'd DON'T") ==
        V{"I", "'m", " we", "'ll", " they", "'d", " DON", "'", "T"});
  CHECK(gpt2_pieces("x\r\ny") == V{"x", "\r", "\n", "y"});
  CHECK(gpt2_pieces("") == V{});
}

TEST_CASE("whitespace is Unicode's White_Space, not PCRE2's \\s", "[text]") {
  // U+180E is no longer whitespace: it joins the space before it as punctuation.
  CHECK(gpt2_pieces("a \xE1\xA0\x8E"
                    "b") == V{"a", " \xE1\xA0\x8E", "b"});
  // U+0085 (NEL) and U+3000 are whitespace.
  CHECK(gpt2_pieces("a \xC2\x85"
                    "b") == V{"a", " ", "\xC2\x85", "b"});
  CHECK(gpt2_pieces("a \xE3\x80\x80"
                    "b") == V{"a", " ", "\xE3\x80\x80", "b"});
  CHECK(with_unicode_whitespace("[^\\s\\p{L}]\\S") ==
        "[^\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
        "\\x{205F}\\x{3000}\\p{L}][^\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}"
        "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]");
  CHECK(with_unicode_whitespace("[]s]\\\\s") == "[]s]\\\\s");  // a literal ']' and '\\' then 's'
  CHECK_THROWS_WITH(with_unicode_whitespace("[\\S]"),
                    Catch::Contains("\\S inside a character class"));
}

TEST_CASE("invalid UTF-8 is kept as pieces of raw bytes between valid runs", "[text]") {
  // Each valid run splits as it would alone: the invalid byte ends "  " like the end of text.
  CHECK(gpt2_pieces("a  \xFF  b") == V{"a", "  ", "\xFF", " ", " b"});
  CHECK(gpt2_pieces("\xE2\x82 x") == V{"\xE2\x82", " x"});  // truncated '€'
  CHECK(gpt2_pieces("ok\xC0\xAF\xED\xA0\x80!") == V{"ok", "\xC0\xAF\xED\xA0\x80", "!"});
  CHECK(gpt2_pieces("\x80") == V{"\x80"});
  std::string all;  // every byte: the pieces still concatenate to the text
  for (int b = 255; b >= 0; --b) all += char(b);
  std::string joined;
  for (const auto& p : gpt2_pieces(all)) joined += p;
  CHECK(joined == all);
}

TEST_CASE("a megabyte of whitespace or letters is one piece, without a matcher failure", "[text]") {
  const std::string spaces(1 << 20, ' ');
  CHECK(gpt2_pieces(spaces) == V{spaces});
  const std::string word = "x" + std::string(1 << 20, 'a');
  CHECK(gpt2_pieces(word) == V{word});
}

TEST_CASE("stages split each previous piece, as Hugging Face's Sequence does", "[text]") {
  PreTokenizer pre;
  pre.add_isolating_stage("\\p{N}");  // Digits, individual_digits
  pre.add_isolating_stage(kGpt2Pattern);
  CHECK(pieces(pre, "abc 123x") == V{"abc", " ", "1", "2", "3", "x"});
  // Digits are every Unicode number, as Rust's char::is_numeric: Arabic-Indic, superscripts.
  CHECK(pieces(pre, " \xD9\xA3\xC2\xB2") == V{" ", "\xD9\xA3", "\xC2\xB2"});
  PreTokenizer split;  // a Llama-3-like split, then no further regex
  split.add_isolating_stage("\\p{N}{1,3}| ?\\p{L}+|\\s+");
  CHECK(pieces(split, "ab 12345.") == V{"ab", " ", "123", "45", "."});
}

TEST_CASE("a malformed pattern is refused with PCRE2's reason", "[text]") {
  PreTokenizer pre;
  CHECK_THROWS_WITH(pre.add_isolating_stage("(unclosed"),
                    Catch::Contains("missing closing parenthesis"));
}
