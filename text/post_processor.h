// What a tokenizer.json post-processor adds around one encoded text, as Hugging Face's
// `tokenizer(text)` (add_special_tokens on) adds it: ByteLevel adds nothing (it only moves
// offsets); TemplateProcessing puts the special tokens of its `single` template before and after
// the text ($A); a Sequence applies its processors in turn. Anything else (BertProcessing,
// RobertaProcessing, a template that uses $B, ...) is kept as a refusal that `apply` raises: a
// tokenizer is still loaded for what needs no post-processor (remat tokenize, chat templates).
// A GGUF tokenizer's is built from ids (text/llama_vocab.h: add_bos_token, add_eos_token).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/json.h"
#include "text/bpe.h"

namespace remat::text {

class PostProcessor {
 public:
  PostProcessor() = default;  // adds nothing
  // `processor` is tokenizer.json's "post_processor" (null or absent: adds nothing); `origin`
  // names the file in the refusal.
  PostProcessor(const JsonValue* processor, std::string origin);
  // Adds `before` and `after` around the text (llama.cpp's add_bos_token and add_eos_token).
  PostProcessor(std::vector<TokenId> before, std::vector<TokenId> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  // One that `apply` refuses with "<origin>: <why>".
  static PostProcessor refusing(std::string origin, std::string why);

  // `ids` with the added tokens around them. Throws std::invalid_argument naming the origin and
  // the post-processor when it is not supported.
  std::vector<TokenId> apply(const std::vector<TokenId>& ids) const;
  // The tokens placed before and after the text.
  const std::vector<TokenId>& before() const { return before_; }
  const std::vector<TokenId>& after() const { return after_; }
  // Empty when supported; otherwise why not.
  const std::string& refusal() const { return refusal_; }

 private:
  void add(const JsonValue& processor);
  void add_template(const JsonValue& processor);

  std::vector<TokenId> before_, after_;
  std::string origin_;
  std::string refusal_;
};

}  // namespace remat::text
