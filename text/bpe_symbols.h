// The first symbols of a piece in a character-level BPE vocabulary, as Hugging Face's BPE model
// makes them (models/bpe/model.rs, merge_word) for SentencePiece conversions (Llama 2, Mistral,
// Gemma): each UTF-8 character that is a token is that token; one that is not becomes its bytes
// as the tokens <0x00>..<0xFF> when byte_fallback is on and all of them exist; otherwise the unk
// token, consecutive unknowns fused into one when fuse_unk is on, or nothing without an unk token.
// Bytes that are not valid UTF-8 are characters of one byte that no token spells.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/bpe.h"

namespace remat::text {

// The byte token's text for `byte`: "<0x41>" for 'A' (two uppercase hex digits).
std::string byte_fallback_token(uint8_t byte);

class CharacterSymbols {
 public:
  // `vocab`: every token's text and id. `unk_token` must be one of them (else
  // std::invalid_argument).
  CharacterSymbols(const std::vector<std::pair<std::string, TokenId>>& vocab, bool byte_fallback,
                   const std::optional<std::string>& unk_token, bool fuse_unk);

  // Appends the symbols of `piece` to `out`.
  void split(std::string_view piece, std::vector<TokenId>& out) const;

 private:
  // Appends the symbols of one character that is no token.
  void unknown(std::string_view character, std::vector<TokenId>& out, bool& unk_open) const;

  std::unordered_map<uint32_t, TokenId> characters_;  // code point -> id of one-character tokens
  std::array<std::optional<TokenId>, 256> bytes_{};   // <0xXX> tokens, when byte_fallback
  bool byte_fallback_ = false;
  std::optional<TokenId> unk_;
  bool fuse_unk_ = false;
};

}  // namespace remat::text
