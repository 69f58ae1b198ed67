// The byte-level BPE tokenizer of a GGUF file (formats/gguf_tokenizer.h) against llama.cpp itself
// on the same file (tests/formats/llama_library.h): every text of
// tests/formats/gguf_tokenizer_files.h gives remat's ids equal to llama_tokenize's, the three ways
// of tests/formats/llama_compare.h, on Qwen3, Llama 3 and GPT-2 files written by llama.cpp's
// gguf-py, on the vocabularies of llama.cpp's own tests, and on GPT-2's vocabulary under every
// supported tokenizer.ggml.pre name. SentencePiece files: gguf_tokenizer_spm_llama_test.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "base/json.h"
#include "formats/gguf.h"
#include "formats/gguf_tokenizer.h"
#include "formats/gguf_writer.h"
#include "tests/formats/gguf_tokenizer_files.h"
#include "tests/formats/llama_compare.h"
#include "tests/text/chat_conversations.h"
#include "text/chat_template.h"
#include "text/llama_vocab.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

using Counts = test::LlamaCounts;

void compare(text::Tokenizer& remat, const test::LlamaVocabModel& llama,
             const std::vector<test::CorpusText>& texts, Counts& counts) {
  test::compare_with_llama(remat, llama, texts, counts);
}

}  // namespace

TEST_CASE(
    "GGUF tokenizer: remat's ids equal llama.cpp's on Qwen3, Llama 3 and GPT-2 files "
    "written by llama.cpp's gguf-py") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source() || !test::have_tokenizer_sources()) return;
  const test::TempFolder folder("gguf_tokenizer_llama");
  const auto texts = test::llama_comparison_texts();
  Counts counts;
  for (const test::GgufSample& s : test::write_gguf_samples(folder)) {
    INFO(s.name);
    const test::LlamaVocabModel llama(*lib, s.gguf);
    GgufTokenizer remat = load_gguf_tokenizer(s.gguf);
    CHECK(remat.tokenizer->vocab_size() == llama.n_tokens());
    // The chat template's rendering of a conversation, with its special tokens, encodes alike.
    std::vector<test::CorpusText> all = texts;
    if (!remat.chat.source.empty()) {
      const JsonValue messages = parse_json(
          R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
              {"role": "assistant", "content": "4"}])");
      all.push_back(
          {"chat", text::ChatTemplate(remat.chat.source).render(messages, remat.chat.options)});
    }
    compare(*remat.tokenizer, llama, all, counts);
  }
  INFO(counts.texts << " texts, " << counts.ids << " ids");
  CHECK(counts.texts > 3 * 30);
}

TEST_CASE(
    "GGUF tokenizer: remat's ids equal llama.cpp's on the vocabularies of llama.cpp's "
    "tokenizer tests") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source()) return;
  auto texts = test::llama_comparison_texts();
  Counts counts;
  for (const std::string& name : test::llama_test_vocabularies()) {
    INFO(name);
    const fs::path file = test::llama_test_vocabulary(name);
    const test::LlamaVocabModel llama(*lib, file);
    auto remat = load_gguf_tokenizer(file);
    std::vector<test::CorpusText> all = texts;
    for (const test::VocabTest& t : test::llama_vocabulary_tests(file))
      all.push_back({"llama.cpp's test text '" + t.text.substr(0, 40) + "'", t.text});
    compare(*remat.tokenizer, llama, all, counts);
  }
  INFO(counts.texts << " texts, " << counts.ids << " ids");
  CHECK(counts.texts > 9 * 30);
}

TEST_CASE(
    "GGUF tokenizer: every supported tokenizer.ggml.pre name splits text as llama.cpp "
    "does") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source()) return;
  // GPT-2's vocabulary from llama.cpp's tests under each name: the split decides the ids.
  const GgufFile base = GgufFile::open(test::llama_test_vocabulary("gpt-2"));
  const test::TempFolder folder("gguf_pre_names");
  const auto texts = test::llama_comparison_texts(false);
  Counts counts;
  for (std::string_view name : text::llama_pre_names()) {
    INFO("tokenizer.ggml.pre " << name);
    GgufMetadata m = base.metadata();
    m.set("tokenizer.ggml.pre", GgufValue::of(std::string(name)));
    const fs::path file = folder.path() / (std::string(name) + ".gguf");
    GgufWriter(file, m, {}).commit();
    const test::LlamaVocabModel llama(*lib, file);
    auto remat = load_gguf_tokenizer(file);
    compare(*remat.tokenizer, llama, texts, counts);
  }
  INFO(counts.texts << " texts, " << counts.ids << " ids");
  CHECK(counts.texts >= text::llama_pre_names().size() * 10);
}

TEST_CASE(
    "GGUF tokenizer: the chat template of a GGUF file renders as tokenizer_config.json's "
    "does") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source() || !test::have_tokenizer_sources()) return;
  const test::TempFolder folder("gguf_chat_template");
  const JsonValue conversations = parse_json(test::chat_conversations());
  int rendered = 0;
  for (const test::GgufSample& s : test::write_gguf_samples(folder)) {
    if (s.name == "gpt2") continue;  // GPT-2 has no chat template
    INFO(s.name);
    const GgufTokenizer gguf = load_gguf_tokenizer(s.gguf);
    const text::ChatTemplateFile config =
        text::load_chat_template(s.source / "tokenizer_config.json");
    CHECK(gguf.chat.source == config.source);
    CHECK(gguf.chat.source == test::LlamaVocabModel(*lib, s.gguf).chat_template());
    CHECK(gguf.chat.options.bos_token == config.options.bos_token);
    CHECK(gguf.chat.options.eos_token == config.options.eos_token);
    const text::ChatTemplate from_gguf(gguf.chat.source), from_config(config.source);
    for (const JsonValue& c : conversations.array) {
      text::ChatOptions g = gguf.chat.options, h = config.options;
      g.add_generation_prompt = h.add_generation_prompt = c.find("add_generation_prompt")->boolean;
      const JsonValue& messages = *c.find("messages");
      CHECK(from_gguf.render(messages, g) == from_config.render(messages, h));
      ++rendered;
    }
  }
  CHECK(rendered >= 2 * 10);
}
