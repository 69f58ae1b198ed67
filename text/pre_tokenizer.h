// Pre-tokenization: text split into pieces that BPE encodes independently, with PCRE2 patterns
// (UTF + Unicode properties, JIT-compiled). Stages run in order, each splitting every piece the
// previous stage produced, as Hugging Face's `Sequence` pre-tokenizer does.
//
// Text need not be valid UTF-8. Patterns match with PCRE2_MATCH_INVALID_UTF: a match never
// contains an invalid sequence and an invalid sequence matches nothing, not even \S, so it acts
// like the end of the text for the lookahead in `\s+(?!\S)`. Each stage keeps the text between
// matches as pieces of their own; with GPT-2's pattern (which matches every valid character) those
// are exactly the maximal runs of invalid bytes. So a valid run encodes exactly as it would on its
// own, and a run of invalid bytes becomes one piece that BPE merges like any other.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace remat::text {

// GPT-2's pre-tokenizer pattern, as published with its encoder.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// `pattern` with \s and \S spelled as Unicode's White_Space property (U+0009–U+000D, U+0020,
// U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), which is what
// GPT-2's Python `regex`, tiktoken's Rust regex and Hugging Face's Oniguruma mean by \s. PCRE2's
// \s with Unicode properties adds U+180E (MONGOLIAN VOWEL SEPARATOR, whitespace before Unicode
// 6.3), which would split text differently. \S inside a character class cannot be rewritten and
// throws std::invalid_argument.
std::string with_unicode_whitespace(std::string_view pattern);

// The Unicode version of PCRE2's character tables ("14.0.0" in Debian 12). Letters and digits
// assigned in later versions are unassigned to it and split as punctuation, where tiktoken or
// Hugging Face built on a newer Unicode see letters.
std::string unicode_version();

// One compiled pattern. Not thread-safe: matching reuses its match data.
class Regex {
 public:
  // Throws std::invalid_argument naming the pattern and PCRE2's message.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // First match at or after `from` in `text`: sets [begin, end) and returns true, or returns
  // false. Empty matches are skipped. A matcher failure (not "no match") throws.
  bool find(std::string_view text, std::size_t from, std::size_t& begin, std::size_t& end);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One step of a pre-tokenizer: cuts a piece into smaller ones (or rewrites it, as Metaspace does).
class PreTokenizerStage {
 public:
  // `first`: the piece starts the text given to encode (no special token before it), which
  // Metaspace's prepend_scheme "first" asks about.
  using Emit = std::function<void(std::string_view piece, bool first)>;
  virtual ~PreTokenizerStage() = default;
  // Calls `emit` for each non-empty piece, in order. The views stay valid during the call only.
  virtual void split(std::string_view text, bool first, const Emit& emit) = 0;
};

class PreTokenizer {
 public:
  using Emit = std::function<void(std::string_view piece)>;

  // A stage that cuts every match of `pattern` out as its own piece, keeping the text between
  // matches as pieces too (Hugging Face's Split with behavior "Isolated").
  void add_isolating_stage(std::string_view pattern);
  void add_stage(std::unique_ptr<PreTokenizerStage> stage);
  bool empty() const { return stages_.empty(); }

  // Calls `emit` for each non-empty piece of `text`, in order; without rewriting stages
  // (Metaspace) the pieces concatenate to `text`. No stages: `text` is one piece. `first`: see
  // PreTokenizerStage.
  void split(std::string_view text, const Emit& emit, bool first = true);

 private:
  void split_from(std::size_t stage, std::string_view text, bool first, const Emit& emit);
  std::vector<std::unique_ptr<PreTokenizerStage>> stages_;
  std::vector<Regex*> isolating_;  // per stage: its pattern when it is an isolating stage
};

}  // namespace remat::text
