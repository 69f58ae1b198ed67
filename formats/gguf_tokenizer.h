// The tokenizer and chat template a GGUF model file carries: its tokenizer.ggml.* keys, read as
// text/llama_vocab.h describes (byte-level BPE, "gpt2", and SentencePiece, "llama"; the rest
// refused naming the key), and tokenizer.chat_template with the text of its bos and eos tokens.
#pragma once

#include <filesystem>
#include <memory>

#include "formats/gguf.h"
#include "text/chat_template.h"
#include "text/llama_vocab.h"
#include "text/tokenizer.h"

namespace remat {

// The tokenizer keys of `metadata`. std::invalid_argument "<origin>: ..." naming the key when
// tokenizer.ggml.model is missing, when a "gpt2" tokenizer lacks tokenizer.ggml.tokens or
// tokenizer.ggml.merges, or when a key has another type than llama.cpp writes.
text::LlamaVocab gguf_llama_vocab(const GgufMetadata& metadata);

// tokenizer.chat_template (empty when the file has none) with bos_token and eos_token: the text
// `tokenizer` gives the tokens tokenizer.ggml.bos_token_id and eos_token_id name.
text::ChatTemplateFile gguf_chat_template(const GgufMetadata& metadata,
                                          const text::Tokenizer& tokenizer);

struct GgufTokenizer {
  std::unique_ptr<text::Tokenizer> tokenizer;
  text::ChatTemplateFile chat;  // gguf_chat_template
};

GgufTokenizer gguf_tokenizer(const GgufMetadata& metadata);
// Whether the GGUF file at `path` carries a tokenizer (tokenizer.ggml.model); reads its header.
bool gguf_has_tokenizer(const std::filesystem::path& path);
// Reads the header of the GGUF file at `path` (formats/gguf.h) and builds its tokenizer.
GgufTokenizer load_gguf_tokenizer(const std::filesystem::path& path);

}  // namespace remat
