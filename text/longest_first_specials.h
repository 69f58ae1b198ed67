// Special tokens cut out of a text as llama.cpp's tokenizer_st_partition cuts them
// (src/llama-vocab.cpp): the special tokens are taken longest first, and each in turn claims every
// occurrence, left to right and not overlapping, that lies wholly in text no longer token claimed
// before it. Where two special tokens overlap in a text, the longer wins wherever it stands, which
// differs from matching at the leftmost position (Tokenizer's rule for Hugging Face files).
// llama.cpp orders tokens of equal length with an unstable sort; here the lower id comes first,
// which decides only between two equally long special tokens that overlap in the text.
#pragma once

#include <cstddef>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace remat::text {

struct SpecialToken;

class LongestFirstSpecials {
 public:
  struct Fragment {
    bool special;
    std::size_t begin, end;  // bytes of the text
    std::size_t index = 0;   // a special token's index in `specials`
  };

  explicit LongestFirstSpecials(const std::vector<SpecialToken>& specials);

  // The text as ordinary pieces (never empty) and special tokens, in order. `all` false: only
  // the tokens matched in plain text (SpecialToken::in_plain_text).
  std::vector<Fragment> split(std::string_view text, bool all) const;
  std::string_view text(std::size_t index) const { return texts_[index]; }

 private:
  std::vector<std::string_view> texts_;
  std::vector<bool> plain_;
  std::vector<std::size_t> rank_;   // index -> place in the claiming order
  std::vector<std::size_t> order_;  // place -> index
  std::unordered_map<std::string_view, std::size_t> by_text_;
  std::vector<std::size_t> lengths_;  // distinct lengths, longest first
  bool first_byte_[2][256] = {};      // [all]
};

}  // namespace remat::text
