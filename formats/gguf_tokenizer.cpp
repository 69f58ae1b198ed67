#include "formats/gguf_tokenizer.h"

#include <stdexcept>
#include <string>

namespace remat {

namespace {

[[noreturn]] void fail(const GgufMetadata& m, const std::string& what) {
  throw std::invalid_argument(m.origin() + ": " + what);
}

}  // namespace

text::LlamaVocab gguf_llama_vocab(const GgufMetadata& m) {
  text::LlamaVocab v;
  v.origin = m.origin();
  const auto model = m.string("tokenizer.ggml.model");
  if (!model) fail(m, "tokenizer.ggml.model is missing: the file holds no tokenizer");
  v.model = *model;
  v.pre = m.string("tokenizer.ggml.pre");
  v.name = m.string("general.name").value_or("");
  if (v.model != "gpt2") return v;  // refused by llama_vocab_tokenizer, naming the model
  auto tokens = m.strings("tokenizer.ggml.tokens");
  if (!tokens) fail(m, "tokenizer.ggml.tokens is missing: the file holds no vocabulary");
  v.tokens = std::move(*tokens);
  auto merges = m.strings("tokenizer.ggml.merges");
  if (!merges) fail(m, "tokenizer.ggml.merges is missing: a byte-level BPE tokenizer needs them");
  v.merges = std::move(*merges);
  if (auto types = m.int32s("tokenizer.ggml.token_type")) v.token_types = std::move(*types);
  v.bos_id = m.uint("tokenizer.ggml.bos_token_id");
  v.eos_id = m.uint("tokenizer.ggml.eos_token_id");
  v.add_bos = m.boolean("tokenizer.ggml.add_bos_token");
  v.add_eos = m.boolean("tokenizer.ggml.add_eos_token");
  return v;
}

text::ChatTemplateFile gguf_chat_template(const GgufMetadata& m, const text::Tokenizer& tokenizer) {
  text::ChatTemplateFile chat;
  chat.source = m.string("tokenizer.chat_template").value_or("");
  const auto text = [&](const char* key) {
    return text::llama_token_text(tokenizer, m.uint(key)).value_or("");
  };
  chat.options.bos_token = text("tokenizer.ggml.bos_token_id");
  chat.options.eos_token = text("tokenizer.ggml.eos_token_id");
  return chat;
}

GgufTokenizer gguf_tokenizer(const GgufMetadata& m) {
  GgufTokenizer out;
  out.tokenizer = text::llama_vocab_tokenizer(gguf_llama_vocab(m));
  out.chat = gguf_chat_template(m, *out.tokenizer);
  return out;
}

bool gguf_has_tokenizer(const std::filesystem::path& path) {
  return GgufFile::open(path).metadata().contains("tokenizer.ggml.model");
}

GgufTokenizer load_gguf_tokenizer(const std::filesystem::path& path) {
  return gguf_tokenizer(GgufFile::open(path).metadata());
}

}  // namespace remat
