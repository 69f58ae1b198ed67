// The text-processing parts of Hugging Face's tokenizer.json that surround its model, read into
// remat's: the normalizer (text/normalizer.h: NFC, Replace with a String pattern, Prepend, and
// Sequence of them), the pre_tokenizer (ByteLevel without add_prefix_space, Split with a String or
// Regex pattern, any behavior and invert (text/split_behavior.h), Digits, Metaspace
// (text/metaspace.h), and Sequence of them) and the decoder (ByteLevel for byte-level BPE;
// Replace, ByteFallback, Fuse, Strip, Metaspace and Sequence for character-level BPE,
// text/decoder.h). Anything else is refused with one std::invalid_argument line naming the file,
// the part and the setting.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "base/json.h"
#include "text/decoder.h"
#include "text/normalizer.h"
#include "text/pre_tokenizer.h"

namespace remat::text {

// `root` is the whole tokenizer.json object.
Normalizer read_hf_normalizer(const std::filesystem::path& file, const JsonValue& root);

// Sets `byte_level` when a ByteLevel step is there: the vocabulary is then spelled in GPT-2's byte
// map and the model is byte-level BPE; otherwise it is character-level.
std::unique_ptr<PreTokenizer> read_hf_pre_tokenizer(const std::filesystem::path& file,
                                                    const JsonValue& root, bool& byte_level);

// nullopt for byte-level BPE (its ids' bytes are the text); for character-level BPE the chain,
// joining tokens with spaces where the file has none, as Hugging Face does.
std::optional<Decoder> read_hf_decoder(const std::filesystem::path& file, const JsonValue& root,
                                       bool byte_level);

}  // namespace remat::text
