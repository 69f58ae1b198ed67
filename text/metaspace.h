// Hugging Face's Metaspace pre-tokenizer (pre_tokenizers/metaspace.rs), SentencePiece's way with
// spaces: every " " becomes the replacement (U+2581 "\u2581" by default), the replacement is put
// before the piece unless it starts with one (prepend_scheme "always"; "first": only before the
// piece that starts the text given to encode; "never"), and with `split` the piece is cut before
// each replacement (SplitDelimiterBehavior MergedWithNext, text/split_behavior.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "text/pre_tokenizer.h"

namespace remat::text {

enum class PrependScheme { always, first, never };

// tokenizer.json's name ("always", "first", "never"), or nullopt.
std::optional<PrependScheme> prepend_scheme(std::string_view name);

class MetaspaceStage : public PreTokenizerStage {
 public:
  // `replacement`: one UTF-8 character (std::invalid_argument otherwise).
  MetaspaceStage(std::string replacement, PrependScheme scheme, bool split);
  void split(std::string_view text, bool first, const Emit& emit) override;

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  std::string rewritten_;  // the piece with its spaces replaced; emitted pieces point into it
};

}  // namespace remat::text
