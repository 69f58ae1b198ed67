// Loading a BPE tokenizer from the files it is published as:
//   - GPT-2's encoder.json + vocab.bpe (OpenAI's release);
//   - Hugging Face's vocab.json + merges.txt;
//   - Hugging Face's tokenizer.json whose model is BPE: byte-level (GPT-2, SmolLM2, Qwen3) or
//     character-level with byte fallback (Llama 2, Gemma), as text/hf_tokenizer_json.h says;
//     added_tokens become special tokens; merges as "a b" strings or ["a", "b"] pairs.
// With encoder.json/vocab.json, "<|endoftext|>" is the special token when the vocabulary has it.
// Anything else (WordPiece, Unigram, a normalizer other than NFC/Replace/Prepend, added tokens
// that strip spaces, ...) is refused with one std::invalid_argument line naming the file and what
// is not supported. A character-level tokenizer.json's decoder is used by decode; the
// post-processor is only kept (Tokenizer::post_processor): encode gives the text's tokens alone.
#pragma once

#include <filesystem>
#include <memory>

#include "text/tokenizer.h"

namespace remat::text {

// `path`: one of the files above, or a folder holding tokenizer.json, vocab.json + merges.txt or
// encoder.json + vocab.bpe (looked for in that order).
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);

}  // namespace remat::text
