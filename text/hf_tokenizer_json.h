// Hugging Face's tokenizer.json, for the byte-level BPE tokenizers it describes (GPT-2, SmolLM2,
// Qwen3 and others built the same way): model BPE; no normalizer, or NFC (text/normalizer.h);
// pre_tokenizer ByteLevel, or a Sequence
// of Split (behavior Isolated, not inverted), Digits and ByteLevel; added_tokens as special
// tokens; post_processor kept beside the tokenizer (text/post_processor.h), not applied by
// encode. Everything else is refused with one std::invalid_argument line naming the file and
// the unsupported setting.
#pragma once

#include <filesystem>
#include <memory>

#include "text/tokenizer.h"

namespace remat::text {

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& file);

}  // namespace remat::text
