// llama.cpp's special-token partition (text/longest_first_specials.h): the longest token claims
// its occurrences first, wherever they are, then the next, in the text left unclaimed.
#include "text/longest_first_specials.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "text/tokenizer.h"

using namespace remat::text;

namespace {

// The fragments as "text" or "[index]", joined with '|'.
std::string split(const LongestFirstSpecials& s, const std::string& text, bool all = true) {
  std::string out;
  for (const auto& f : s.split(text, all)) {
    if (!out.empty()) out += '|';
    out += f.special ? "[" + std::to_string(f.index) + "]" : text.substr(f.begin, f.end - f.begin);
    if (f.special) CHECK(text.substr(f.begin, f.end - f.begin) == s.text(f.index));
  }
  return out;
}

}  // namespace

TEST_CASE("longest-first specials: the longer token wins where two overlap, wherever it starts") {
  // "ab" starts first in "abcd", but "bcd" is longer.
  const std::vector<SpecialToken> specials = {{"ab", 10}, {"bcd", 11}, {"<s>", 12, true}};
  const LongestFirstSpecials s(specials);
  CHECK(split(s, "abcd") == "a|[1]");
  CHECK(split(s, "xabx") == "x|[0]|x");
  // After "bcd" has claimed its bytes, "ab" takes what is left whole.
  CHECK(split(s, "ababcd<s>ab") == "[0]|a|[1]|[2]|[0]");
  CHECK(split(s, "abab") == "[0]|[0]");
  CHECK(split(s, "") == "");
  CHECK(split(s, "none") == "none");
  // Special tokens off: only those matched in plain text.
  CHECK(split(s, "abcd<s>", false) == "abcd|[2]");
}

TEST_CASE("longest-first specials: equally long tokens go by id, and runs split from the left") {
  const std::vector<SpecialToken> specials = {{"\n\n", 5}, {"\n\n\n", 6}, {"xy", 8}, {"yz", 7}};
  const LongestFirstSpecials s(specials);
  CHECK(split(s, "\n\n\n\n\n\n\n\n") == "[1]|[1]|[0]");
  // "yz" (id 7) claims before "xy" (id 8).
  CHECK(split(s, "xyz") == "x|[3]");
}
