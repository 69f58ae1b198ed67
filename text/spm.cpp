#include "text/spm.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <stdexcept>

#include "text/bpe_symbols.h"

namespace remat::text {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // "▁", SentencePiece's visible space

// The bytes of a UTF-8 character by its lead byte alone, as llama.cpp's unicode_len_utf8: it
// checks nothing after the lead byte, which decides how invalid UTF-8 is cut.
std::size_t lead_length(char lead) {
  static constexpr std::size_t kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLength[uint8_t(lead) >> 4];
}

// `text` with its spaces as "▁" (and one before it with `prefix`); `origin` gets, per byte of the
// result, the byte of `text` it comes from.
std::string replace_spaces(std::string_view text, bool prefix, std::vector<uint32_t>& origin) {
  std::string out;
  out.reserve(text.size() + 8);
  origin.clear();
  if (prefix) {
    out += kSpace;
    origin.assign(kSpace.size(), 0);
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ' ')
      out += kSpace;
    else
      out += text[i];
    origin.resize(out.size(), uint32_t(i));
  }
  return out;
}

struct Symbol {
  uint32_t start, length;  // bytes of the escaped text; length 0: merged into its left neighbour
  int64_t prev, next;      // -1: none
};

// A pair of adjacent symbols whose bytes spell a token. A candidate whose symbols changed since
// it was queued no longer spans `length` bytes, and is dropped when it comes up.
struct Candidate {
  float score;
  uint32_t left, right, length;
};

// llama.cpp's llm_bigram_spm::comparator: the higher score first, then the leftmost pair.
struct Lower {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

SpmModel::SpmModel(std::vector<SpmPiece> pieces, bool add_space_prefix)
    : pieces_(std::move(pieces)), byte_ids_(256), add_space_prefix_(add_space_prefix) {
  ids_.reserve(pieces_.size());
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const std::string& text = pieces_[i].text;
    if (text.empty()) throw std::invalid_argument("token " + std::to_string(i) + " has no text");
    const auto [it, fresh] = ids_.emplace(std::string_view(text), TokenId(i));
    if (!fresh)
      throw std::invalid_argument("tokens " + std::to_string(it->second) + " and " +
                                  std::to_string(i) + " are both '" + text + "'");
  }
  // llama_vocab::byte_to_token: the token <0xXX> whatever its type, else the byte as a token.
  for (int b = 0; b < 256; ++b) {
    byte_ids_[std::size_t(b)] = find(byte_fallback_token(uint8_t(b)));
    if (!byte_ids_[std::size_t(b)]) byte_ids_[std::size_t(b)] = find(std::string(1, char(b)));
  }
}

std::optional<TokenId> SpmModel::find(std::string_view text) const {
  const auto it = ids_.find(text);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

TokenId SpmModel::byte_token(uint8_t byte) const {
  if (const auto id = byte_ids_[byte]) return *id;
  char hex[8];
  std::snprintf(hex, sizeof hex, "%02X", byte);
  throw std::invalid_argument(std::string("the text needs byte 0x") + hex +
                              " as a token, but the vocabulary has neither <0x" + hex +
                              "> nor the byte itself");
}

void SpmModel::encode(std::string_view raw, std::vector<TokenId>& out,
                      std::vector<std::size_t>* starts) const {
  if (raw.size() >= UINT32_MAX / 4)
    throw std::invalid_argument("a text of " + std::to_string(raw.size()) +
                                " bytes between special tokens is too long to encode (1 GiB)");
  std::vector<uint32_t> origin;
  const std::string text = replace_spaces(raw, add_space_prefix_, origin);
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = std::min(lead_length(text[at]), text.size() - at);
    const int64_t index = int64_t(symbols.size());
    symbols.push_back(
        {uint32_t(at), uint32_t(n), index - 1, at + n == text.size() ? -1 : index + 1});
    at += n;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, Lower> queue;
  const auto try_pair = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[std::size_t(left)];
    const uint32_t length = l.length + symbols[std::size_t(right)].length;
    if (const auto id = find(std::string_view(text).substr(l.start, length)))
      queue.push({pieces_[*id].score, uint32_t(left), uint32_t(right), length});
  };
  for (std::size_t i = 1; i < symbols.size(); ++i) try_pair(int64_t(i) - 1, int64_t(i));
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != c.length) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[std::size_t(right.next)].prev = c.left;
    try_pair(left.prev, c.left);
    try_pair(c.left, left.next);
  }
  for (int64_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[std::size_t(i)].next) {
    const Symbol& s = symbols[std::size_t(i)];
    const std::string_view piece = std::string_view(text).substr(s.start, s.length);
    if (const auto id = find(piece)) {
      out.push_back(*id);
      if (starts) starts->push_back(origin[s.start]);
      continue;
    }
    for (std::size_t k = 0; k < piece.size(); ++k) {
      out.push_back(byte_token(uint8_t(piece[k])));
      if (starts) starts->push_back(origin[s.start + k]);
    }
  }
}

std::string_view SpmModel::piece_text(TokenId id, std::string& scratch) const {
  const SpmPiece& p = pieces_[id];
  switch (p.type) {
    case LlamaTokenType::control:
    case LlamaTokenType::unknown:
    case LlamaTokenType::user_defined:
      return p.text;
    case LlamaTokenType::normal:
      scratch.clear();
      for (std::size_t at = 0; at < p.text.size();) {
        if (p.text.compare(at, kSpace.size(), kSpace) == 0) {
          scratch += ' ';
          at += kSpace.size();
        } else {
          scratch += p.text[at++];
        }
      }
      return scratch;
    case LlamaTokenType::byte: {
      // llama.cpp's token_to_byte: strtol of the two characters after "<0x" (0 when not hex).
      if (p.text.size() < 3) return {};
      scratch.assign(1, char(std::strtol(p.text.substr(3, 2).c_str(), nullptr, 16)));
      return scratch;
    }
    default:
      return {};
  }
}

std::string SpmModel::decode(const std::vector<TokenId>& ids,
                             std::vector<std::size_t>* starts) const {
  std::string out, scratch;
  if (starts) starts->clear();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::string_view piece = piece_text(ids[i], scratch);
    // Only the first token loses its space, whatever it is.
    if (i == 0 && add_space_prefix_ && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
    if (starts) starts->push_back(out.size());
    out += piece;
  }
  return out;
}

}  // namespace remat::text
