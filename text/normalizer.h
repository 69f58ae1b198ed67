// tokenizer.json's normalizer: none, or Unicode Normalization Form C (Qwen3's {"type": "NFC"}),
// computed by ICU's normalizer rather than tables of our own, so it follows the Unicode data ICU
// ships (Unicode 15.0 with Debian 12's ICU 72).
//
// Hugging Face normalizes the text between added tokens before pre-tokenizing it; special tokens
// are never normalized. remat accepts any bytes where Hugging Face takes valid UTF-8 only: each
// maximal run of valid UTF-8 is normalized on its own and invalid bytes are kept unchanged, as the
// pre-tokenizer keeps them as pieces of their own (text/pre_tokenizer.h). A normalized text
// decodes to its normal form, not to the bytes given.
#pragma once

#include <string>
#include <string_view>

namespace remat::text {

enum class Normalization { none, nfc };

// `text` in NFC (see above). Appends to `out`.
void append_nfc(std::string_view text, std::string& out);
std::string to_nfc(std::string_view text);

// The Unicode version of ICU's normalization data, e.g. "15.0".
std::string normalizer_unicode_version();

}  // namespace remat::text
