// A BPE tokenizer: special tokens, pre-tokenization, BPE, and the way back; or a SentencePiece
// vocabulary as llama.cpp runs it (text/spm.h), with llama.cpp's special-token partition
// (text/longest_first_specials.h) and decoding.
//
// encode: special tokens found in the text (unless disabled) become their ids; the text between
// them is normalized (if the tokenizer has a normalizer), pre-tokenized and each piece
// BPE-encoded. Any bytes are accepted; invalid UTF-8 is
// encoded byte-wise (see pre_tokenizer.h). decode: each id's bytes, concatenated (byte-level BPE),
// so that decode(encode(x)) == x for every byte string x (without a normalizer; with NFC, x's
// normal form); or, with a decoder (character-level BPE, text/decoder.h), the token texts passed
// through it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/bpe.h"
#include "text/decoder.h"
#include "text/longest_first_specials.h"
#include "text/normalizer.h"
#include "text/post_processor.h"
#include "text/pre_tokenizer.h"
#include "text/spm.h"

namespace remat::text {

struct SpecialToken {
  std::string text;  // as it appears in text, e.g. "<|endoftext|>"
  TokenId id;
  // Matched even where special tokens are off (encode's `specials` false): llama.cpp's
  // user-defined tokens, which its llama_tokenize matches without parse_special.
  bool in_plain_text = false;
  // Matched in the normalized text rather than in the text given (tokenizer.json's
  // "normalized"); for a tokenizer with a normalizer that leaves the token's text as it is.
  bool normalized = false;
};

// Where two special tokens overlap in a text, which one is cut out: the one that starts first
// (the longest of those starting there), as Hugging Face's tokenizers match added tokens; or the
// longer wherever it starts, as llama.cpp's tokenizer_st_partition does
// (text/longest_first_specials.h).
enum class SpecialMatch { leftmost, longest_first };

class Tokenizer {
 public:
  // `vocab`: every BPE token's bytes and id (ids may have gaps); `specials` may reuse an id of
  // `vocab` (GPT-2's <|endoftext|> is in both) or add new ones. Throws std::invalid_argument.
  // `options`: see BpeModel. With SpecialMatch::longest_first every special token is matched in
  // the text as given (none may be SpecialToken::normalized).
  Tokenizer(const std::vector<std::pair<std::string, TokenId>>& vocab,
            const std::vector<std::pair<std::string, std::string>>& merges,
            std::unique_ptr<PreTokenizer> pre_tokenizer, std::vector<SpecialToken> specials,
            const BpeOptions& options = {}, SpecialMatch match = SpecialMatch::leftmost);
  // A SentencePiece vocabulary: `specials` (ids and texts of `spm`'s pieces) are cut out longest
  // first, the text between them is encoded by `spm`, and decode is `spm`'s. Throws
  // std::invalid_argument.
  Tokenizer(SpmModel spm, std::vector<SpecialToken> specials);

  // With `specials` false, special-token text is encoded as ordinary text (except the tokens
  // matched in plain text). Not thread-safe (the BPE cache and the matcher are reused); one
  // Tokenizer per thread.
  std::vector<TokenId> encode(std::string_view text, bool specials = true);
  void encode(std::string_view text, bool specials, std::vector<TokenId>& out);

  // Throws std::invalid_argument naming the position of an id that is no token. With `starts`,
  // also where each id's text begins in the result (text/decoder.h).
  std::string decode(const std::vector<TokenId>& ids,
                     std::vector<std::size_t>* starts = nullptr) const;
  // For a SentencePiece vocabulary, where each id of encode(text) begins in `text` (a decoded
  // text moves them: a space prefix, "▁" written in the text); nullopt for other tokenizers,
  // whose decode says where.
  std::optional<std::vector<std::size_t>> encoded_starts(std::string_view text) const;
  // The bytes of one id, or nullopt.
  std::optional<std::string_view> token_bytes(TokenId id) const;

  BpeModel& bpe() { return bpe_; }

  // What tokenizer.json's post-processor adds around a text (text/post_processor.h); `encode`
  // never applies it. Other formats add nothing.
  const PostProcessor& post_processor() const { return post_; }
  void set_post_processor(PostProcessor post) { post_ = std::move(post); }

  // tokenizer.json's normalizer, applied to the text between special tokens before
  // pre-tokenization (text/normalizer.h); none by default.
  const Normalizer& normalizer() const { return normalizer_; }
  void set_normalizer(Normalizer n) { normalizer_ = std::move(n); }

  // tokenizer.json's decoder (text/decoder.h); none by default: decode concatenates bytes.
  void set_decoder(std::optional<Decoder> d) { decoder_ = std::move(d); }
  // Whether decode is more than the ids' bytes joined: a decoder, or a SentencePiece vocabulary.
  bool has_decoder() const { return decoder_.has_value() || spm_ != nullptr; }

  // One more than the largest id: the rows a model's embedding needs.
  std::size_t vocab_size() const { return bytes_.size(); }
  const std::vector<SpecialToken>& specials() const { return specials_; }
  // The id of special token `text`, or nullopt.
  std::optional<TokenId> special_id(std::string_view text) const;

 private:
  using Ordinary = std::function<void(std::string_view text, bool first)>;
  // Cuts the special tokens matched before (`normalized` false) or after normalization out of
  // `text`, appending their ids; `ordinary` encodes the text around them. `first`: `text` starts
  // the text given to encode (Metaspace's prepend_scheme "first").
  void split_specials(std::string_view text, bool normalized, bool specials, bool first,
                      std::vector<TokenId>& out, const Ordinary& ordinary) const;
  void encode_ordinary(std::string_view text, bool first, bool specials, std::vector<TokenId>& out);
  // Indexes each token's bytes and the special tokens.
  void index_tokens(const std::vector<std::pair<std::string, TokenId>>& vocab);
  // Earliest special token at or after `from` (longest on ties) among those matched before or
  // after normalization, all of them or only those matched in plain text: its index, or -1.
  int next_special(std::string_view text, std::size_t from, bool normalized, bool all,
                   std::size_t& at) const;

  BpeModel bpe_;
  std::unique_ptr<PreTokenizer> pre_;
  std::vector<SpecialToken> specials_;
  PostProcessor post_;
  Normalizer normalizer_;
  std::optional<Decoder> decoder_;
  std::unique_ptr<SpmModel> spm_;                  // set: a SentencePiece vocabulary
  std::unique_ptr<LongestFirstSpecials> longest_;  // set: special tokens cut out longest first
  std::string normalized_, scratch_;               // encode_ordinary's normalized text, reused
  // [normalized][all]: first bytes of the special tokens next_special looks for, and whether any.
  bool first_byte_[2][2][256] = {};
  bool any_[2][2] = {};
  std::vector<std::string> bytes_;  // id -> bytes
  std::vector<bool> present_;       // id -> is a token (ids may have gaps)
};

}  // namespace remat::text
