// Loading a byte-level BPE tokenizer from the files it is published as:
//   - GPT-2's encoder.json + vocab.bpe (OpenAI's release);
//   - Hugging Face's vocab.json + merges.txt;
//   - Hugging Face's tokenizer.json whose model is BPE with ByteLevel pre-tokenization, alone or
//     in a Sequence with Split (behavior Isolated) and Digits, as GPT-2, SmolLM2 and Qwen3 ship
//     it, with no normalizer or NFC (Qwen3's); added_tokens become special tokens; merges as
//     "a b" strings or ["a", "b"] pairs.
// With encoder.json/vocab.json, "<|endoftext|>" is the special token when the vocabulary has it.
// Anything else (WordPiece, Unigram, a normalizer other than NFC, added tokens that strip spaces,
// ...) is refused with one std::invalid_argument line naming the file and what is not supported. A
// tokenizer.json decoder is not used, and its post-processor is only kept (Tokenizer::
// post_processor): encode gives the text's tokens alone.
#pragma once

#include <filesystem>
#include <memory>

#include "text/tokenizer.h"

namespace remat::text {

// `path`: one of the files above, or a folder holding tokenizer.json, vocab.json + merges.txt or
// encoder.json + vocab.bpe (looked for in that order).
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);

}  // namespace remat::text
