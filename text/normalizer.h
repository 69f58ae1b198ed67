// tokenizer.json's normalizer: none, or a sequence of steps applied in order (its "Sequence"):
//   - NFC, Unicode Normalization Form C (Qwen3's {"type": "NFC"}), computed by ICU's normalizer
//     rather than tables of our own, so it follows the Unicode data ICU ships (Unicode 15.0 with
//     Debian 12's ICU 72);
//   - Replace with a literal pattern: every occurrence, left to right, replaced by the content
//     (Gemma's and Llama 2's " " -> "\u2581");
//   - Prepend: the text put before a non-empty text (Llama 2's "\u2581").
//
// Hugging Face normalizes the text between added tokens before pre-tokenizing it; special tokens
// are never normalized. remat accepts any bytes where Hugging Face takes valid UTF-8 only: each
// maximal run of valid UTF-8 is normalized on its own and invalid bytes are kept unchanged, as the
// pre-tokenizer keeps them as pieces of their own (text/pre_tokenizer.h). A normalized text
// decodes to its normal form, not to the bytes given.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace remat::text {

class Normalizer {
 public:
  Normalizer() = default;  // changes nothing
  static Normalizer nfc();

  void add_nfc();
  // `pattern` must not be empty (std::invalid_argument).
  void add_replace(std::string pattern, std::string content);
  void add_prepend(std::string prefix);

  bool empty() const { return steps_.empty(); }
  // The steps, e.g. "NFC" or "Prepend(\u2581), Replace( -> \u2581)", for messages and tests.
  std::string describe() const;
  // `text` normalized, appended to `out`; `scratch` is reused between steps.
  void apply(std::string_view text, std::string& out, std::string& scratch) const;

 private:
  enum class Kind { nfc, replace, prepend };
  struct Step {
    Kind kind;
    std::string a, b;  // replace: pattern, content; prepend: prefix
  };
  void apply_step(const Step& step, std::string_view text, std::string& out) const;
  std::vector<Step> steps_;
};

// `text` in NFC (see above). Appends to `out`.
void append_nfc(std::string_view text, std::string& out);
std::string to_nfc(std::string_view text);

// The Unicode version of ICU's normalization data, e.g. "15.0".
std::string normalizer_unicode_version();

}  // namespace remat::text
