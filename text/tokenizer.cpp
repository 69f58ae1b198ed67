#include "text/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace remat::text {

Tokenizer::Tokenizer(const std::vector<std::pair<std::string, TokenId>>& vocab,
                     const std::vector<std::pair<std::string, std::string>>& merges,
                     std::unique_ptr<PreTokenizer> pre_tokenizer,
                     std::vector<SpecialToken> specials, const BpeOptions& options)
    : bpe_(vocab, merges, options), pre_(std::move(pre_tokenizer)), specials_(std::move(specials)) {
  TokenId top = 0;
  for (const auto& [bytes, id] : vocab) top = std::max(top, id);
  for (const auto& s : specials_) top = std::max(top, s.id);
  bytes_.resize(std::size_t(top) + 1);
  present_.resize(bytes_.size());
  for (const auto& [bytes, id] : vocab) {
    bytes_[id] = bytes;
    present_[id] = true;
  }
  for (const auto& s : specials_) {
    if (s.text.empty()) throw std::invalid_argument("a special token has no text");
    if (present_[s.id] && bytes_[s.id] != s.text)
      throw std::invalid_argument("special token '" + s.text + "' has id " + std::to_string(s.id) +
                                  ", which is already the token '" + bytes_[s.id] + "'");
    bytes_[s.id] = s.text;
    present_[s.id] = true;
    special_first_byte_[uint8_t(s.text[0])] = true;
    if (s.in_plain_text) plain_first_byte_[uint8_t(s.text[0])] = any_plain_ = true;
  }
}

std::optional<std::string_view> Tokenizer::token_bytes(TokenId id) const {
  if (id >= present_.size() || !present_[id]) return std::nullopt;
  return std::string_view(bytes_[id]);
}

std::optional<TokenId> Tokenizer::special_id(std::string_view text) const {
  for (const auto& s : specials_)
    if (s.text == text) return s.id;
  return std::nullopt;
}

int Tokenizer::next_special(std::string_view text, std::size_t from, bool all,
                            std::size_t& at) const {
  const bool* first_byte = all ? special_first_byte_ : plain_first_byte_;
  for (std::size_t i = from; i < text.size(); ++i) {
    if (!first_byte[uint8_t(text[i])]) continue;
    int best = -1;
    for (std::size_t k = 0; k < specials_.size(); ++k) {
      const std::string& s = specials_[k].text;
      if ((all || specials_[k].in_plain_text) && text.compare(i, s.size(), s) == 0 &&
          (best < 0 || s.size() > specials_[std::size_t(best)].text.size()))
        best = int(k);
    }
    if (best >= 0) {
      at = i;
      return best;
    }
  }
  return -1;
}

void Tokenizer::encode_ordinary(std::string_view text, bool first, std::vector<TokenId>& out) {
  if (text.empty()) return;
  if (!normalizer_.empty()) {
    normalized_.clear();
    normalizer_.apply(text, normalized_, scratch_);
    text = normalized_;
  }
  pre_->split(
      text, [&](std::string_view piece) { bpe_.encode(piece, out); }, first);
}

void Tokenizer::encode(std::string_view text, bool specials, std::vector<TokenId>& out) {
  if (specials_.empty() || (!specials && !any_plain_)) {
    encode_ordinary(text, true, out);
    return;
  }
  std::size_t from = 0, at = 0;
  for (int k; (k = next_special(text, from, specials, at)) >= 0;) {
    encode_ordinary(text.substr(from, at - from), from == 0, out);
    out.push_back(specials_[std::size_t(k)].id);
    from = at + specials_[std::size_t(k)].text.size();
  }
  encode_ordinary(text.substr(from), from == 0, out);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool specials) {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3);
  encode(text, specials, out);
  return out;
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids,
                              std::vector<std::size_t>* starts) const {
  std::string out;
  std::vector<std::string> texts;
  if (starts) starts->clear();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto bytes = token_bytes(ids[i]);
    if (!bytes)
      throw std::invalid_argument("token " + std::to_string(i) + " is id " +
                                  std::to_string(ids[i]) + ", which is not in the vocabulary (" +
                                  std::to_string(vocab_size()) + " ids)");
    if (decoder_) {
      texts.emplace_back(*bytes);
      continue;
    }
    if (starts) starts->push_back(out.size());
    out += *bytes;
  }
  return decoder_ ? decoder_->decode(std::move(texts), starts) : out;
}

}  // namespace remat::text
