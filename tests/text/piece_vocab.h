// Small SentencePiece-style tokenizer.json files for tests, shaped as Gemma 3 and Llama 2 publish
// theirs: special tokens first, the 256 byte tokens <0x00>..<0xFF>, single characters (some ASCII
// left out, so that it falls back to bytes), then pieces built by merges; BPE with byte_fallback
// and an unk token, and the normalizer, pre-tokenizer and decoder given.
#pragma once

#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/json_writer.h"
#include "text/byte_unicode.h"

namespace remat::test {

class PieceVocab {
 public:
  PieceVocab(const std::vector<std::string>& specials, const std::vector<std::string>& words) {
    for (const auto& s : specials) add(s);
    specials_ = specials;
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      add(name);
    }
    // Printable ASCII but for Q, @, ~ and `, which fall back to bytes.
    for (char c = ' ' + 1; c < 0x7F; ++c)
      if (std::string("Q@~`").find(c) == std::string::npos) add(std::string(1, c));
    for (const char* c : {"\u2581", "\n", "\t", "\u4e2d", "\u00e9", "\u6587"}) add(c);
    for (const auto& w : words) word(w);
  }

  // The tokenizer.json text; `parts` are the JSON texts of normalizer, pre_tokenizer, decoder;
  // `model_options` more keys of the model (each starting with ','); the post-processor puts
  // special token `bos` first.
  std::string json(const std::string& normalizer, const std::string& pre_tokenizer,
                   const std::string& decoder, const std::string& model_options, bool pair_merges,
                   std::size_t bos) const {
    std::string added, vocab, merges;
    for (std::size_t i = 0; i < specials_.size(); ++i)
      added += std::string(i ? "," : "") + R"({"id": )" + std::to_string(i) + R"(, "content": )" +
               json_string(specials_[i]) +
               R"(, "single_word": false, "lstrip": false, "rstrip": false, )"
               R"("normalized": false, "special": true})";
    for (std::size_t i = 0; i < tokens_.size(); ++i)
      vocab += std::string(i ? "," : "") + json_string(tokens_[i]) + ": " + std::to_string(i);
    for (std::size_t i = 0; i < merges_.size(); ++i) {
      const auto& [a, b] = merges_[i];
      merges += std::string(i ? "," : "") +
                (pair_merges ? "[" + json_string(a) + ", " + json_string(b) + "]"
                             : json_string(a + " " + b));
    }
    return R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [)" + added +
           more_added_ + R"(], "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" +
           pre_tokenizer +
           R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": )"
           R"({"id": )" +
           json_string(specials_[bos]) +
           R"(, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], )"
           R"("special_tokens": {)" +
           json_string(specials_[bos]) + R"(: {"id": )" + json_string(specials_[bos]) +
           R"(, "ids": [)" + std::to_string(bos) + R"(], "tokens": [)" +
           json_string(specials_[bos]) + R"(]}}}, "decoder": )" + decoder +
           R"(, "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", )"
           R"("continuing_subword_prefix": null, "end_of_word_suffix": null, "ignore_merges": )"
           R"(false)" +
           model_options + R"(, "vocab": {)" + vocab + R"(}, "merges": [)" + merges + "]}}";
  }

  // Marks the token `text` (already in the vocabulary) an added token too, as SentencePiece's
  // user-defined pieces become: matched in the text before BPE, in the normalized text when
  // `normalized`.
  void add_added(const std::string& text, bool normalized, bool special) {
    for (std::size_t i = 0; i < tokens_.size(); ++i)
      if (tokens_[i] == text)
        more_added_ += R"(, {"id": )" + std::to_string(i) + R"(, "content": )" + json_string(text) +
                       R"(, "normalized": )" + (normalized ? "true" : "false") +
                       R"(, "special": )" + (special ? "true" : "false") + "}";
  }

  std::size_t size() const { return tokens_.size(); }
  std::size_t merge_count() const { return merges_.size(); }

 private:
  void add(const std::string& t) {
    if (have_.insert(t).second) tokens_.push_back(t);
  }
  // `w`'s characters merged left to right, each new prefix a token.
  void word(const std::string& w) {
    std::string current;
    for (std::size_t i = 0; i < w.size();) {
      char32_t c = 0;
      const std::size_t len = text::decode_utf8(w, i, c);
      const std::string ch = w.substr(i, len);
      i += len;
      if (current.empty()) {
        current = ch;
        continue;
      }
      if (!have_.count(current + ch)) {
        merges_.emplace_back(current, ch);
        add(current + ch);
      }
      current += ch;
    }
  }

  std::vector<std::string> specials_, tokens_;
  std::string more_added_;  // add_added's tokens, as JSON list items after a comma
  std::set<std::string> have_;
  std::vector<std::pair<std::string, std::string>> merges_;
};

}  // namespace remat::test
