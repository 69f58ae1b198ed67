// tokenizer.json's decoder for character-level BPE (SentencePiece conversions): the texts of the
// ids pass through a chain of steps, each mapping a list of token texts to another, and the last
// list is concatenated, as Hugging Face's decoders do (decoders/*.rs):
//   Replace(pattern, content)  every literal occurrence in each token replaced;
//   ByteFallback               each run of byte tokens <0x00>..<0xFF> becomes the bytes it spells;
//   Fuse                       all tokens one;
//   Strip(content, start, stop) up to `start` leading and `stop` trailing `content` characters
//                              cut from each token;
//   Metaspace(replacement)     the replacement becomes " " except in the first token, where it is
//                              dropped (unless prepend_scheme is "never").
// One difference: where a run of byte tokens is not valid UTF-8, Hugging Face writes U+FFFD per
// byte and remat keeps the bytes, as its byte-level decoding does, so that a text that is cut into
// pieces decodes to the bytes the pieces would give together.
// Without a decoder Hugging Face joins the tokens with spaces (`join_with_spaces`).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace remat::text {

class Decoder {
 public:
  // `pattern` must not be empty; `content` of Strip and `replacement` one UTF-8 character
  // (std::invalid_argument).
  void add_replace(std::string pattern, std::string content);
  void add_byte_fallback();
  void add_fuse();
  void add_strip(std::string content, std::size_t start, std::size_t stop);
  void add_metaspace(std::string replacement, bool drop_in_first);
  void set_join_with_spaces(bool on) { join_with_spaces_ = on; }

  // The decoded text of `tokens`. With `starts`, also where each token's text begins in it (a
  // token whose text is cut away begins where the next one does). Exact for chains whose Replace
  // and Metaspace come before ByteFallback and Fuse (every published one); a Replace pattern that a
  // later step would join across tokens is not searched across them.
  std::string decode(std::vector<std::string> tokens,
                     std::vector<std::size_t>* starts = nullptr) const;

 private:
  enum class Kind { replace, byte_fallback, fuse, strip, metaspace };
  struct Step {
    Kind kind;
    std::string a, b;  // replace: pattern, content; strip: content; metaspace: replacement
    std::size_t start = 0, stop = 0;
    bool drop_in_first = false;
  };
  // A text of the chain and where the tokens it came from begin in it.
  struct Piece {
    std::string text;
    std::vector<std::pair<std::size_t, std::size_t>> marks;  // (offset, token index)
  };
  static void apply(const Step& step, std::vector<Piece>& pieces);
  std::vector<Step> steps_;
  bool join_with_spaces_ = false;
};

}  // namespace remat::text
