#include "formats/gguf_tokenizer.h"

#include <stdexcept>
#include <string>

namespace remat {

namespace {

[[noreturn]] void fail(const GgufMetadata& m, const std::string& what) {
  throw std::invalid_argument(m.origin() + ": " + what);
}

// tokenizer.ggml.scores: float32, or int32 as llama.cpp also reads them.
void read_scores(const GgufMetadata& m, text::LlamaVocab& v) {
  const GgufValue* scores = m.find("tokenizer.ggml.scores");
  if (!scores) return;
  if (scores->is_array() && scores->element_type() == GgufValueType::float32) {
    v.scores = *m.floats("tokenizer.ggml.scores");
  } else if (scores->is_array() && scores->element_type() == GgufValueType::int32) {
    const auto integers = *m.int32s("tokenizer.ggml.scores");
    v.scores.assign(integers.begin(), integers.end());
  } else {
    fail(m, "tokenizer.ggml.scores is not an array of float32 or int32, as llama.cpp reads it");
  }
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
  // Others are refused by llama_vocab_tokenizer, naming the model.
  if (v.model != "gpt2" && v.model != "llama") return v;
  auto tokens = m.strings("tokenizer.ggml.tokens");
  if (!tokens) fail(m, "tokenizer.ggml.tokens is missing: the file holds no vocabulary");
  v.tokens = std::move(*tokens);
  if (v.model == "gpt2") {
    auto merges = m.strings("tokenizer.ggml.merges");
    if (!merges) fail(m, "tokenizer.ggml.merges is missing: a byte-level BPE tokenizer needs them");
    v.merges = std::move(*merges);
  } else {
    read_scores(m, v);
    v.add_space_prefix = m.boolean("tokenizer.ggml.add_space_prefix");
  }
  if (auto types = m.int32s("tokenizer.ggml.token_type")) v.token_types = std::move(*types);
  for (std::size_t k = 0; k < text::kLlamaFimKinds; ++k)
    for (std::string_view key : text::llama_fim_keys(text::LlamaFim(k)))
      if (const auto id = m.uint(key); id && *id < v.tokens.size()) v.fim_ids[k] = id;
  v.bos_id = m.uint("tokenizer.ggml.bos_token_id");
  v.eos_id = m.uint("tokenizer.ggml.eos_token_id");
  v.add_bos = m.boolean("tokenizer.ggml.add_bos_token");
  v.add_eos = m.boolean("tokenizer.ggml.add_eos_token");
  return v;
}

text::ChatTemplateFile gguf_chat_template(const GgufMetadata& m, const text::Tokenizer& tokenizer) {
  text::ChatTemplateFile chat;
  chat.source = m.string("tokenizer.chat_template").value_or("");
  // The ids as llama.cpp takes them: the keys, or a SentencePiece vocabulary's defaults.
  text::LlamaVocab ids;
  ids.model = m.string("tokenizer.ggml.model").value_or("");
  ids.tokens.resize(tokenizer.vocab_size());
  ids.bos_id = m.uint("tokenizer.ggml.bos_token_id");
  ids.eos_id = m.uint("tokenizer.ggml.eos_token_id");
  const auto text = [&](std::optional<uint64_t> id) {
    return text::llama_token_text(tokenizer, id).value_or("");
  };
  chat.options.bos_token = text(text::llama_bos_id(ids));
  chat.options.eos_token = text(text::llama_eos_id(ids));
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
