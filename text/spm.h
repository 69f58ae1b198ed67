// A SentencePiece vocabulary as llama.cpp runs one (tokenizer.ggml.model "llama": Llama 2,
// Mistral, TinyLlama, Gemma 3), read from its pieces, scores and types
// (src/llama-vocab.cpp, llm_tokenizer_spm and token_to_piece):
//   encode: a text between special tokens gets a leading space when add_space_prefix, its spaces
//     become "▁" (U+2581), and it is cut into characters by their UTF-8 lead byte alone (a byte
//     that cannot start a character is one; a lead byte takes the bytes after it whatever they
//     are, so invalid UTF-8 stays bytes and is never U+FFFD). Then, as long as two adjacent pieces
//     spell a token of any type, the pair whose token has the highest score is merged, the
//     leftmost on ties. A piece that is no token becomes one byte token per byte: "<0xXX>", or the
//     byte itself where the vocabulary has no such token.
//   decode: control, unknown and user-defined tokens give their text, normal tokens their text
//     with "▁" as a space, byte tokens their byte, unused and undefined ones nothing; with
//     add_space_prefix one leading space of the first token is dropped (llama_detokenize with
//     remove_special off and unparse_special on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/bpe.h"
#include "text/llama_token_type.h"

namespace remat::text {

struct SpmPiece {
  std::string text;  // as tokenizer.ggml.tokens spells it: "▁the", "<0x0A>", "<start_of_turn>"
  float score = 0;   // tokenizer.ggml.scores: higher merges first
  LlamaTokenType type = LlamaTokenType::normal;
};

class SpmModel {
 public:
  // Ids are the pieces' positions. std::invalid_argument when two pieces share a text (llama.cpp
  // asserts on that) or a piece has none.
  SpmModel(std::vector<SpmPiece> pieces, bool add_space_prefix);
  // Moving keeps the pieces' storage, which the index views; a copy would not.
  SpmModel(SpmModel&&) = default;
  SpmModel(const SpmModel&) = delete;
  SpmModel& operator=(const SpmModel&) = delete;

  // Appends the ids of `text`, a text between special tokens, and with `starts` where each
  // begins in `text` (the space prefix belongs to the token that starts the text).
  // std::invalid_argument when a byte that must fall back has no token.
  void encode(std::string_view text, std::vector<TokenId>& out,
              std::vector<std::size_t>* starts = nullptr) const;

  // The decoded text of `ids` (each below size()); with `starts`, where each id's text begins.
  std::string decode(const std::vector<TokenId>& ids, std::vector<std::size_t>* starts) const;

  std::size_t size() const { return pieces_.size(); }
  const SpmPiece& piece(TokenId id) const { return pieces_[id]; }
  bool add_space_prefix() const { return add_space_prefix_; }

 private:
  std::optional<TokenId> find(std::string_view text) const;
  // The id llama.cpp's byte_to_token gives `byte`.
  TokenId byte_token(uint8_t byte) const;
  // What one token adds to a decoded text.
  std::string_view piece_text(TokenId id, std::string& scratch) const;

  std::vector<SpmPiece> pieces_;
  std::unordered_map<std::string_view, TokenId> ids_;  // views into pieces_' texts
  std::vector<std::optional<TokenId>> byte_ids_;       // 256 entries
  bool add_space_prefix_;
};

}  // namespace remat::text
