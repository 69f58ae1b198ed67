// A byte-level BPE tokenizer as llama.cpp describes one: the tokenizer.ggml.* keys of a GGUF file
// (formats/gguf_tokenizer.h reads them), built to give llama.cpp's ids (src/llama-vocab.cpp):
//   - tokenizer.ggml.model must be "gpt2" (byte-level BPE); SentencePiece ("llama"), WordPiece
//     ("bert"), Unigram ("t5"), RWKV and the rest are refused;
//   - tokenizer.ggml.pre names the pre-tokenizer: each supported name gives the regular expressions
//     llama.cpp runs for it, in order (llama_pre_tokenizer below), and llama.cpp's defaults for it
//     (ignore_merges and add_bos for the Llama 3 family); absent, llama.cpp's "default";
//   - tokenizer.ggml.tokens are spelled in GPT-2's byte alphabet (text/byte_unicode.h), except the
//     control (type 3), user-defined (4) and unknown (2) tokens: those are written as they appear
//     in text and become special tokens. Control and unknown tokens are matched only where special
//     tokens are (llama_tokenize's parse_special); user-defined ones always
//     (SpecialToken::in_plain_text). A few texts are control tokens whatever their type, as
//     llama.cpp makes them (its end-of-turn, end-of-generation and fill-in-the-middle tokens);
//   - tokenizer.ggml.merges are "a b" strings, highest priority first;
//   - bos/eos token ids and add_bos_token/add_eos_token give what a text starts and ends with where
//     Hugging Face's post-processor would add tokens (Tokenizer::post_processor).
// Known differences from llama.cpp: it splits text on special tokens longest first across the
// whole text, remat at the leftmost match (longest on ties), which differs only where two special
// tokens overlap in the text; and Unicode classes come from PCRE2's tables (text/pre_tokenizer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace remat::text {

// llama.cpp's enum llama_token_type (tokenizer.ggml.token_type).
enum class LlamaTokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

// The keys' values as read; `origin` (the file) starts every error.
struct LlamaVocab {
  std::string origin;
  std::string model;                 // tokenizer.ggml.model
  std::optional<std::string> pre;    // tokenizer.ggml.pre
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type; empty: every token normal
  std::vector<std::string> merges;   // tokenizer.ggml.merges
  std::optional<uint64_t> bos_id;    // tokenizer.ggml.bos_token_id
  std::optional<uint64_t> eos_id;    // tokenizer.ggml.eos_token_id
  std::optional<bool> add_bos;       // tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;       // tokenizer.ggml.add_eos_token
  std::string name;                  // general.name ("" when absent)
};

// What llama.cpp does for one tokenizer.ggml.pre name.
struct LlamaPreTokenizer {
  std::vector<std::string_view> patterns;  // PreTokenizer stages, in order
  bool ignore_merges = false;              // a piece that is a token is that token
  bool add_bos = false;                    // the default of tokenizer.ggml.add_bos_token
};

// The pre-tokenizer of `name`, or nullopt when remat does not support it.
std::optional<LlamaPreTokenizer> llama_pre_tokenizer(std::string_view name);
// Every supported name, in the order the refusal lists them.
const std::vector<std::string_view>& llama_pre_names();

// The tokenizer `vocab` describes, with a post-processor that adds the bos token first when
// add_bos_token (or the pre-tokenizer's default) says so and the eos token last when
// add_eos_token does. Throws std::invalid_argument, one line "<origin>: <key> ..." naming the key
// and value that cannot be used.
std::unique_ptr<Tokenizer> llama_vocab_tokenizer(const LlamaVocab& vocab);

// The text of token `id` as a chat template writes it (bos_token, eos_token): a special token's
// text, a normal token's bytes; nullopt for an id past the tokens.
std::optional<std::string> llama_token_text(const Tokenizer& tokenizer, std::optional<uint64_t> id);

}  // namespace remat::text
