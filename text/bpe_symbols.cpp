#include "text/bpe_symbols.h"

#include <cstdio>
#include <stdexcept>

#include "text/byte_unicode.h"

namespace remat::text {

std::string byte_fallback_token(uint8_t byte) {
  char text[8];
  std::snprintf(text, sizeof text, "<0x%02X>", byte);
  return text;
}

CharacterSymbols::CharacterSymbols(const std::vector<std::pair<std::string, TokenId>>& vocab,
                                   bool byte_fallback, const std::optional<std::string>& unk_token,
                                   bool fuse_unk)
    : byte_fallback_(byte_fallback), fuse_unk_(fuse_unk) {
  std::unordered_map<std::string_view, TokenId> by_text;
  for (const auto& [text, id] : vocab) {
    by_text.emplace(text, id);
    char32_t c = 0;
    if (!text.empty() && decode_utf8(text, 0, c) == text.size()) characters_.emplace(c, id);
  }
  if (byte_fallback)
    for (int b = 0; b < 256; ++b)
      if (const auto it = by_text.find(byte_fallback_token(uint8_t(b))); it != by_text.end())
        bytes_[std::size_t(b)] = it->second;
  if (unk_token) {
    const auto it = by_text.find(*unk_token);
    if (it == by_text.end())
      throw std::invalid_argument("the unk token '" + *unk_token + "' is not in the vocabulary");
    unk_ = it->second;
  }
}

void CharacterSymbols::unknown(std::string_view character, std::vector<TokenId>& out,
                               bool& unk_open) const {
  if (byte_fallback_) {
    bool all = true;
    for (char b : character) all = all && bytes_[uint8_t(b)].has_value();
    if (all) {
      for (char b : character) out.push_back(*bytes_[uint8_t(b)]);
      unk_open = false;
      return;
    }
  }
  if (!unk_) return;  // Hugging Face drops what it can neither spell nor call unknown
  if (!(unk_open && fuse_unk_)) out.push_back(*unk_);
  unk_open = true;
}

void CharacterSymbols::split(std::string_view piece, std::vector<TokenId>& out) const {
  bool unk_open = false;  // the last symbol is an unk that the next unknown may fuse with
  for (std::size_t i = 0; i < piece.size();) {
    char32_t c = 0;
    std::size_t len = decode_utf8(piece, i, c);
    const auto known = len ? characters_.find(c) : characters_.end();
    if (len == 0) len = 1;  // an invalid byte: a character no token spells
    if (known != characters_.end()) {
      out.push_back(known->second);
      unk_open = false;
    } else {
      unknown(piece.substr(i, len), out, unk_open);
    }
    i += len;
  }
}

}  // namespace remat::text
