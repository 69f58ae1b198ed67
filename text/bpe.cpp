#include "text/bpe.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <queue>
#include <stdexcept>

#include "text/bpe_symbols.h"

namespace remat::text {

namespace {

std::string printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  return out;
}

// Open addressing on (left id, right id): the merge loop's hot lookup, without the node
// allocations and pointer chasing of std::unordered_map.
class PairTable {
 public:
  struct Merge {
    uint32_t rank;
    TokenId result;
  };

  void reserve(std::size_t count) {
    std::size_t size = 16;
    while (size < count * 2) size *= 2;
    slots_.assign(size, Slot{kEmpty, {}});
  }
  // False when the pair is already present.
  bool insert(TokenId a, TokenId b, Merge m) {
    for (std::size_t i = hash(key(a, b));; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == key(a, b)) return false;
      if (slots_[i].key == kEmpty) {
        slots_[i] = Slot{key(a, b), m};
        return true;
      }
    }
  }
  const Merge* find(TokenId a, TokenId b) const {
    for (std::size_t i = hash(key(a, b));; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == key(a, b)) return &slots_[i].merge;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  static uint64_t key(TokenId a, TokenId b) { return (uint64_t(a) << 32) | b; }
  std::size_t hash(uint64_t k) const {
    k *= 0x9E3779B97F4A7C15ull;
    return std::size_t(k >> 32) & (slots_.size() - 1);
  }
  std::vector<Slot> slots_;
};

// Pieces seen recently and their ids. Cleared when full: text repeats its common pieces, so a
// bounded table keeps nearly every hit without growing with the input.
class PieceCache {
 public:
  static constexpr std::size_t kMaxEntries = 1 << 16;
  static constexpr std::size_t kMaxPieceBytes = 256;

  bool find(std::string_view piece, std::vector<TokenId>& out) const {
    const auto it = map_.find(piece);
    if (it == map_.end()) return false;
    out.insert(out.end(), ids_.begin() + it->second.first,
               ids_.begin() + it->second.first + it->second.second);
    return true;
  }
  void insert(std::string_view piece, const TokenId* ids, std::size_t count) {
    if (piece.size() > kMaxPieceBytes) return;
    if (map_.size() >= kMaxEntries) clear();
    if (chunks_.empty() || chunk_used_ + piece.size() > kChunkBytes) {
      chunks_.push_back(std::make_unique<char[]>(kChunkBytes));
      chunk_used_ = 0;
    }
    char* key = chunks_.back().get() + chunk_used_;
    std::copy(piece.begin(), piece.end(), key);
    chunk_used_ += piece.size();
    map_.emplace(std::string_view(key, piece.size()), std::make_pair(ids_.size(), count));
    ids_.insert(ids_.end(), ids, ids + count);
  }
  void clear() {
    map_.clear();
    ids_.clear();
    chunks_.clear();
  }

 private:
  static constexpr std::size_t kChunkBytes = 1 << 16;
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> map_;
  std::vector<TokenId> ids_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  std::size_t chunk_used_ = 0;
};

}  // namespace

// The id of a byte the vocabulary has no token for (MissingBytes::drop): never output.
constexpr TokenId kNoToken = ~TokenId(0) - 1;

struct BpeModel::Impl {
  std::unordered_map<std::string, TokenId> ids;  // token bytes -> id
  std::array<TokenId, 256> byte_ids{};
  PairTable pairs;
  std::size_t merges = 0;
  bool ignore_merges = false;
  std::unique_ptr<CharacterSymbols> characters;  // character-level; null: byte-level
  PieceCache cache;

  // Scratch for the merge loop, kept to avoid allocating per piece.
  struct Candidate {
    uint32_t rank;
    uint32_t left;  // position of the pair's left token
    TokenId left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::vector<TokenId> token;
  std::vector<uint32_t> next, prev;
  std::vector<Candidate> heap;

  void push_pair(uint32_t left) {
    const uint32_t right = next[left];
    if (right >= token.size()) return;
    if (const auto* m = pairs.find(token[left], token[right])) {
      heap.push_back({m->rank, left, token[left], token[right]});
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  }

  // The lowest-ranked live pair is merged first; a candidate whose tokens changed since it was
  // queued is stale and dropped. Positions keep their order, so ties go to the leftmost pair.
  void merge_piece(std::string_view piece, std::vector<TokenId>& out) {
    if (piece.size() >= UINT32_MAX)
      throw std::invalid_argument("a pre-tokenized piece of " + std::to_string(piece.size()) +
                                  " bytes is too long to encode (at most 4 GiB)");
    token.clear();
    if (characters)
      characters->split(piece, token);
    else
      for (char b : piece) token.push_back(byte_ids[uint8_t(b)]);
    const uint32_t n = uint32_t(token.size());
    next.resize(n);
    prev.resize(n);
    heap.clear();
    for (uint32_t i = 0; i < n; ++i) {
      next[i] = i + 1;
      prev[i] = i - 1;  // wraps for i = 0: "no previous"
    }
    for (uint32_t i = 0; i + 1 < n; ++i) push_pair(i);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const Candidate c = heap.back();
      heap.pop_back();
      const uint32_t right = next[c.left];
      if (token[c.left] != c.left_id || right >= n || token[right] != c.right_id ||
          next[c.left] == c.left)
        continue;
      token[c.left] = pairs.find(c.left_id, c.right_id)->result;
      next[c.left] = next[right];
      if (next[right] < n) prev[next[right]] = c.left;
      next[right] = right;  // marks `right` dead
      token[right] = ~TokenId(0);
      if (prev[c.left] < n) push_pair(prev[c.left]);
      push_pair(c.left);
    }
    for (uint32_t i = 0; i < n; i = next[i])
      if (token[i] != kNoToken) out.push_back(token[i]);
  }
};

BpeModel::BpeModel(const std::vector<std::pair<std::string, TokenId>>& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   const BpeOptions& options)
    : impl_(std::make_unique<Impl>()) {
  std::unordered_map<TokenId, std::string_view> seen;
  for (const auto& [bytes, id] : vocab) {
    if (!seen.emplace(id, bytes).second)
      throw std::invalid_argument("token id " + std::to_string(id) + " is given to both '" +
                                  printable(seen[id]) + "' and '" + printable(bytes) + "'");
    impl_->ids.emplace(bytes, id);
  }
  if (options.characters)
    impl_->characters = std::make_unique<CharacterSymbols>(vocab, options.byte_fallback,
                                                           options.unk_token, options.fuse_unk);
  for (int b = 0; b < 256 && !options.characters; ++b) {
    const int64_t id = find(std::string(1, char(b)));
    if (id < 0 && options.missing_bytes == MissingBytes::drop) {
      impl_->byte_ids[b] = kNoToken;
      continue;
    }
    if (id < 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      throw std::invalid_argument(std::string("the vocabulary has no token for byte ") + hex +
                                  "; byte-level BPE needs all 256");
    }
    impl_->byte_ids[b] = TokenId(id);
  }
  impl_->pairs.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const int64_t ia = find(a), ib = find(b), iab = find(a + b);
    if (ia < 0 || ib < 0 || iab < 0)
      throw std::invalid_argument("merge " + std::to_string(rank + 1) + " ('" + printable(a) +
                                  "' '" + printable(b) + "'): '" +
                                  printable(ia < 0   ? a
                                            : ib < 0 ? b
                                                     : a + b) +
                                  "' is not in the vocabulary");
    impl_->pairs.insert(TokenId(ia), TokenId(ib), {uint32_t(rank), TokenId(iab)});
  }
  impl_->merges = merges.size();
}

BpeModel::~BpeModel() = default;
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;

int64_t BpeModel::find(std::string_view bytes) const {
  const auto it = impl_->ids.find(std::string(bytes));
  return it == impl_->ids.end() ? -1 : int64_t(it->second);
}

std::size_t BpeModel::merge_count() const {
  return impl_->merges;
}

void BpeModel::set_ignore_merges(bool on) {
  impl_->ignore_merges = on;
  impl_->cache.clear();  // cached pieces were encoded under the other rule
}

void BpeModel::encode(std::string_view piece, std::vector<TokenId>& out) {
  if (piece.size() == 1 && !impl_->characters) {
    if (const TokenId id = impl_->byte_ids[uint8_t(piece[0])]; id != kNoToken) out.push_back(id);
    return;
  }
  if (impl_->cache.find(piece, out)) return;
  const std::size_t first = out.size();
  if (const int64_t whole = impl_->ignore_merges ? find(piece) : -1; whole >= 0)
    out.push_back(TokenId(whole));
  else
    impl_->merge_piece(piece, out);
  impl_->cache.insert(piece, out.data() + first, out.size() - first);
}

}  // namespace remat::text
