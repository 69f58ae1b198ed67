// Hugging Face's Split pre-tokenizer (pre_tokenizers/split.rs): the matches of a pattern, or with
// `invert` the text between them, are the delimiters, and the behavior says what becomes of them
// (tokenizer/normalizer.rs, SplitDelimiterBehavior):
//   removed             delimiters dropped, the text between them kept;
//   isolated            every delimiter a piece of its own;
//   merged_with_previous a delimiter joins the piece before it (unless that is a delimiter too);
//   merged_with_next    a delimiter joins the piece after it (unless that is a delimiter too);
//   contiguous          consecutive delimiters one piece.
// A pattern is a literal string or a regular expression (PCRE2, as text/pre_tokenizer.h reads
// them). Empty matches delimit nothing (Hugging Face would keep an empty delimiter, which no
// behavior turns into a piece).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/pre_tokenizer.h"

namespace remat::text {

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// The behavior of tokenizer.json's name ("Removed", "MergedWithPrevious", ...), or nullopt.
std::optional<SplitBehavior> split_behavior(std::string_view name);

// [begin, end) of each part of a text, in order, and whether it is a delimiter.
struct SplitPart {
  std::size_t begin, end;
  bool delimiter;
};

// The pieces `behavior` makes of `parts` (which cover the text in order): [begin, end) ranges.
std::vector<std::pair<std::size_t, std::size_t>> split_pieces(const std::vector<SplitPart>& parts,
                                                              SplitBehavior behavior);

class SplitStage : public PreTokenizerStage {
 public:
  // `literal`: `pattern` is a string matched as written (not empty), else a regular expression
  // (std::invalid_argument when it does not compile).
  SplitStage(std::string_view pattern, bool literal, SplitBehavior behavior, bool invert);
  ~SplitStage() override;
  void split(std::string_view text, bool first, const Emit& emit) override;

 private:
  std::vector<SplitPart> parts(std::string_view text);

  std::string literal_;
  std::unique_ptr<Regex> regex_;  // null for a literal
  SplitBehavior behavior_;
  bool invert_;
  std::vector<SplitPart> parts_;  // scratch
};

}  // namespace remat::text
