// The tokenizer llama.cpp describes with the tokenizer.ggml.* keys of a GGUF file
// (formats/gguf_tokenizer.h reads them), built to give llama.cpp's ids (src/llama-vocab.cpp):
//   - tokenizer.ggml.model "gpt2" is byte-level BPE, "llama" a SentencePiece vocabulary
//     (text/spm.h); WordPiece ("bert"), Unigram ("t5"), RWKV and the rest are refused;
//   - the control (type 3), user-defined (4) and unknown (2) tokens are written as they appear in
//     text and become special tokens. Control and unknown tokens are matched only where special
//     tokens are (llama_tokenize's parse_special); user-defined ones always
//     (SpecialToken::in_plain_text). A few texts are control tokens whatever their type, as
//     llama.cpp makes them: its end-of-generation texts always, and the first fill-in-the-middle
//     text of each kind that it finds while the kind's id key is unset (llama_fim_keys);
//   - where special tokens overlap in a text, the longer wins wherever it starts, as llama.cpp cuts
//     them out (text/longest_first_specials.h);
//   - bos/eos token ids and add_bos_token/add_eos_token give what a text starts and ends with where
//     Hugging Face's post-processor would add tokens (Tokenizer::post_processor).
// "gpt2":
//   - tokenizer.ggml.pre names the pre-tokenizer: each supported name gives the regular expressions
//     llama.cpp runs for it, in order (llama_pre_tokenizer below), and llama.cpp's defaults for it
//     (ignore_merges and add_bos for the Llama 3 family); absent, llama.cpp's "default";
//   - tokenizer.ggml.tokens are spelled in GPT-2's byte alphabet (text/byte_unicode.h), except the
//     special tokens;
//   - tokenizer.ggml.merges are "a b" strings, highest priority first.
//   Known difference from llama.cpp: Unicode classes come from PCRE2's tables
//   (text/pre_tokenizer.h).
// "llama" (SentencePiece), with no known difference:
//   - tokenizer.ggml.tokens as written, tokenizer.ggml.scores (0 when absent) deciding the merges;
//   - tokenizer.ggml.add_space_prefix (true when absent) puts a space before each text between
//     special tokens; add_bos_token defaults to true, bos_token_id to 1 and eos_token_id to 2.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/llama_token_type.h"
#include "text/tokenizer.h"

namespace remat::text {

// The fill-in-the-middle token kinds llama.cpp looks for by text (llama_vocab::impl::load).
enum class LlamaFim { pre, suf, mid, pad, rep, sep };
constexpr std::size_t kLlamaFimKinds = 6;
// The keys naming a kind's token id, in the order llama.cpp reads them: tokenizer.ggml.fim_*_id,
// then for pre, suf and mid the deprecated prefix_, suffix_ and middle_token_id.
const std::vector<std::string_view>& llama_fim_keys(LlamaFim kind);

// The keys' values as read; `origin` (the file) starts every error.
struct LlamaVocab {
  std::string origin;
  std::string model;                     // tokenizer.ggml.model
  std::optional<std::string> pre;        // tokenizer.ggml.pre
  std::vector<std::string> tokens;       // tokenizer.ggml.tokens
  std::vector<int32_t> token_types;      // tokenizer.ggml.token_type; empty: every token normal
  std::vector<std::string> merges;       // tokenizer.ggml.merges ("gpt2")
  std::vector<float> scores;             // tokenizer.ggml.scores ("llama"); empty: every score 0
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix ("llama")
  std::optional<uint64_t> bos_id;        // tokenizer.ggml.bos_token_id
  std::optional<uint64_t> eos_id;        // tokenizer.ggml.eos_token_id
  std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;           // tokenizer.ggml.add_eos_token
  std::string name;                      // general.name ("" when absent)
  // Per LlamaFim kind, the id its keys name as llama.cpp takes it: the last of them that names a
  // token (one past the tokens is ignored); nullopt when none does.
  std::array<std::optional<uint64_t>, kLlamaFimKinds> fim_ids;
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

// The bos or eos token id llama.cpp uses: `id` (the key's value), or for "llama" vocabularies its
// default (bos 1, eos 2) where the key is absent or names no token; nullopt when none is valid.
std::optional<uint64_t> llama_bos_id(const LlamaVocab& vocab);
std::optional<uint64_t> llama_eos_id(const LlamaVocab& vocab);

// The text of token `id` as a chat template writes it (bos_token, eos_token): a special token's
// text, a normal token's bytes; nullopt for an id past the tokens.
std::optional<std::string> llama_token_text(const Tokenizer& tokenizer, std::optional<uint64_t> id);

}  // namespace remat::text
