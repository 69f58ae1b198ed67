// BPE: a vocabulary of byte strings and merges by rank. A piece of text starts as one token per
// byte (byte-level BPE) or per character (character-level, text/bpe_symbols.h) and the adjacent
// pair whose merge has the lowest rank (leftmost on ties) is merged until no pair has a merge, as
// GPT-2's encoder, tiktoken and Hugging Face do.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace remat::text {

using TokenId = uint32_t;

// What a vocabulary without a token for some byte means: refused (byte-level BPE files spell all
// 256), or that byte is left out of every encoding, as llama.cpp and Hugging Face leave out what
// they cannot spell (vocabularies trained on UTF-8 text may lack the bytes UTF-8 never uses).
enum class MissingBytes { refuse, drop };

// How a piece becomes its first symbols.
struct BpeOptions {
  BpeOptions(MissingBytes missing = MissingBytes::refuse) : missing_bytes(missing) {}
  MissingBytes missing_bytes;  // byte-level only
  // Character-level (Hugging Face's BPE over SentencePiece pieces): symbols are UTF-8 characters,
  // with byte_fallback, unk_token and fuse_unk as text/bpe_symbols.h describes.
  bool characters = false;
  bool byte_fallback = false;
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
};

class BpeModel {
 public:
  // `vocab`: every token's bytes and id; `merges`: pairs of token bytes, lowest rank first. Throws
  // std::invalid_argument (one line) for a duplicate id, a byte with no single-byte token
  // (byte-level, unless missing_bytes is drop), an unk token not in the vocabulary, or a merge
  // whose parts or result are not in the vocabulary. A repeated merge keeps its first rank.
  BpeModel(const std::vector<std::pair<std::string, TokenId>>& vocab,
           const std::vector<std::pair<std::string, std::string>>& merges,
           const BpeOptions& options = {});
  ~BpeModel();
  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;

  // With ignore_merges (Hugging Face's option of that name), a piece that is itself a token is
  // that token, whatever the merges would make of it.
  void set_ignore_merges(bool on);

  // Appends the ids of `piece`. Results are cached per piece; not thread-safe.
  void encode(std::string_view piece, std::vector<TokenId>& out);

  // The id of exactly these bytes, or -1.
  int64_t find(std::string_view bytes) const;
  std::size_t merge_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace remat::text
