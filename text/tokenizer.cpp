#include "text/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace remat::text {

Tokenizer::Tokenizer(const std::vector<std::pair<std::string, TokenId>>& vocab,
                     const std::vector<std::pair<std::string, std::string>>& merges,
                     std::unique_ptr<PreTokenizer> pre_tokenizer,
                     std::vector<SpecialToken> specials, const BpeOptions& options,
                     SpecialMatch match)
    : bpe_(vocab, merges, options), pre_(std::move(pre_tokenizer)), specials_(std::move(specials)) {
  index_tokens(vocab);
  if (match != SpecialMatch::longest_first) return;
  for (const auto& s : specials_)
    if (s.normalized)
      throw std::invalid_argument("special token '" + s.text +
                                  "' is matched after normalization, which longest-first "
                                  "matching does not do");
  longest_ = std::make_unique<LongestFirstSpecials>(specials_);
}

Tokenizer::Tokenizer(SpmModel spm, std::vector<SpecialToken> specials)
    : bpe_({}, {}, BpeOptions(MissingBytes::drop)),
      pre_(std::make_unique<PreTokenizer>()),
      specials_(std::move(specials)),
      spm_(std::make_unique<SpmModel>(std::move(spm))) {
  std::vector<std::pair<std::string, TokenId>> vocab;
  vocab.reserve(spm_->size());
  for (TokenId id = 0; id < spm_->size(); ++id) vocab.emplace_back(spm_->piece(id).text, id);
  index_tokens(vocab);
  longest_ = std::make_unique<LongestFirstSpecials>(specials_);
}

void Tokenizer::index_tokens(const std::vector<std::pair<std::string, TokenId>>& vocab) {
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
    for (int all = 0; all < 2; ++all)
      if (all || s.in_plain_text)
        first_byte_[s.normalized][all][uint8_t(s.text[0])] = any_[s.normalized][all] = true;
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

int Tokenizer::next_special(std::string_view text, std::size_t from, bool normalized, bool all,
                            std::size_t& at) const {
  const bool* first_byte = first_byte_[normalized][all];
  for (std::size_t i = from; i < text.size(); ++i) {
    if (!first_byte[uint8_t(text[i])]) continue;
    int best = -1;
    for (std::size_t k = 0; k < specials_.size(); ++k) {
      const SpecialToken& s = specials_[k];
      if (s.normalized == normalized && (all || s.in_plain_text) &&
          text.compare(i, s.text.size(), s.text) == 0 &&
          (best < 0 || s.text.size() > specials_[std::size_t(best)].text.size()))
        best = int(k);
    }
    if (best >= 0) {
      at = i;
      return best;
    }
  }
  return -1;
}

void Tokenizer::split_specials(std::string_view text, bool normalized, bool specials, bool first,
                               std::vector<TokenId>& out, const Ordinary& ordinary) const {
  if (!any_[normalized][specials]) {
    ordinary(text, first);
    return;
  }
  std::size_t from = 0, at = 0;
  for (int k; (k = next_special(text, from, normalized, specials, at)) >= 0;) {
    ordinary(text.substr(from, at - from), first && from == 0);
    out.push_back(specials_[std::size_t(k)].id);
    from = at + specials_[std::size_t(k)].text.size();
  }
  ordinary(text.substr(from), first && from == 0);
}

void Tokenizer::encode_ordinary(std::string_view text, bool first, bool specials,
                                std::vector<TokenId>& out) {
  if (text.empty()) return;
  if (!normalizer_.empty()) {
    normalized_.clear();
    normalizer_.apply(text, normalized_, scratch_);
    text = normalized_;
  }
  split_specials(text, true, specials, first, out, [&](std::string_view piece, bool piece_first) {
    pre_->split(
        piece, [&](std::string_view p) { bpe_.encode(p, out); }, piece_first);
  });
}

void Tokenizer::encode(std::string_view text, bool specials, std::vector<TokenId>& out) {
  if (longest_) {
    for (const auto& f : longest_->split(text, specials)) {
      const std::string_view piece = text.substr(f.begin, f.end - f.begin);
      if (f.special)
        out.push_back(specials_[f.index].id);
      else if (spm_)
        spm_->encode(piece, out);
      else
        encode_ordinary(piece, f.begin == 0, specials, out);
    }
    return;
  }
  split_specials(text, false, specials, true, out, [&](std::string_view segment, bool first) {
    encode_ordinary(segment, first, specials, out);
  });
}

std::optional<std::vector<std::size_t>> Tokenizer::encoded_starts(std::string_view text) const {
  if (!spm_) return std::nullopt;
  std::vector<TokenId> ids;
  std::vector<std::size_t> starts;
  for (const auto& f : longest_->split(text, true)) {
    const std::size_t first = starts.size();
    if (f.special)
      starts.push_back(0);
    else
      spm_->encode(text.substr(f.begin, f.end - f.begin), ids, &starts);
    for (std::size_t i = first; i < starts.size(); ++i) starts[i] += f.begin;
  }
  return starts;
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
    if (spm_) continue;
    if (decoder_) {
      texts.emplace_back(*bytes);
      continue;
    }
    if (starts) starts->push_back(out.size());
    out += *bytes;
  }
  if (spm_) return spm_->decode(ids, starts);
  return decoder_ ? decoder_->decode(std::move(texts), starts) : out;
}

}  // namespace remat::text
