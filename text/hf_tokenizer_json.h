// Hugging Face's tokenizer.json for the BPE tokenizers it describes:
//   - byte-level BPE (GPT-2, SmolLM2, Qwen3, Llama 3): a ByteLevel pre-tokenizer step, the
//     vocabulary spelled in GPT-2's byte map;
//   - character-level BPE (SentencePiece conversions: Llama 2, Mistral, Gemma): no ByteLevel step,
//     tokens as written, with byte_fallback, unk_token and fuse_unk (text/bpe_symbols.h).
// Normalizer, pre_tokenizer and decoder as text/hf_pipeline_json.h reads them; added_tokens as
// special tokens; post_processor kept beside the tokenizer (text/post_processor.h), not applied by
// encode. Everything else (another model, BPE dropout, continuing_subword_prefix,
// end_of_word_suffix, added tokens that strip spaces, ...) is refused with one
// std::invalid_argument line naming the file and the unsupported setting.
#pragma once

#include <filesystem>
#include <memory>

#include "text/tokenizer.h"

namespace remat::text {

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& file);

}  // namespace remat::text
