// The SentencePiece tokenizer of a GGUF file (tokenizer.ggml.model "llama", text/spm.h) against
// llama.cpp itself on the same file: remat's ids equal llama_tokenize's the three ways of
// tests/formats/llama_compare.h, and remat's decoding of llama.cpp's ids equals
// llama_detokenize's, on Gemma 3's 262k and Llama 2's 32k vocabularies written as llama.cpp's
// converter writes them (tests/formats/gguf_tokenizer_files.h), on llama.cpp's own SentencePiece
// test vocabularies (Llama 2's from its tokenizer.model, Baichuan's), and on overlapping special
// tokens. The texts include invalid UTF-8 and random bytes: llama.cpp's SentencePiece path cuts
// them by lead byte and falls back to byte tokens, and remat does the same.
#include <catch2/catch.hpp>

#include <algorithm>
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

using namespace remat;
namespace fs = std::filesystem;

namespace {

// Every text of the byte-level comparison, the generated texts that are not valid UTF-8, and
// texts around SentencePiece's spaces, byte tokens and Gemma's and Llama 2's special tokens.
std::vector<test::CorpusText> spm_texts() {
  std::vector<test::CorpusText> out = test::llama_comparison_texts();
  for (auto& c : test::generated_corpus())
    if (!text::is_valid_utf8(c.bytes)) out.push_back(std::move(c));
  const std::vector<test::CorpusText> more = {
      {"gemma-chat",
       "<bos><start_of_turn>user\nWhat is 2+2? 👋<end_of_turn>\n<start_of_turn>model\n4, "
       "naturally.<end_of_turn>\n<start_of_turn>user\n  नमस्ते\tمرحبا<end_of_turn><eos>"},
      {"gemma-specials",
       "<start_of_turn><start_of_turn><end_of_turn>x<pad><unk><mask>[multimodal]<unused0>"
       "<unused99> <start_of_image><end_of_image><image_soft_token><start_of_turn"},
      {"gemma-user-defined",
       "<table><tr><td>1</td></tr></table>\n\n\n\n<h1>T</h1><b>b</b><s>s</s> <code>x</code>"},
      {"llama2-chat", "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST]"},
      {"spaces", " leading\n  two\n   three\ttab\t\ttabs  trailing   \n\n\n \n x  y   z    "},
      {"one-space", " "},
      {"newlines", "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\na\n"},
      {"sentencepiece-text", "▁already▁escaped ▁ <0x41><0x0A> <0xZZ> [PAD5] [EMPTY_3]"},
      {"scripts-2",
       "Привет, мир! 你好，世界。こんにちは世界 안녕하세요 हिन्दी भाषा العربية لغة "
       "Ελληνικά 🇩🇪🏴‍☠️ 👩🏽‍💻"},
      {"invalid-bytes",
       "a\xFF"
       "b\xC3(c\xE2\x82 d\xF0\x9F\x98 e\x80\x80 \xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80 end\xE2"},
      {"lead-bytes-at-end", "x\xF0"},
  };
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

void compare_file(const test::LlamaLibrary& lib, const fs::path& file,
                  const std::vector<test::CorpusText>& texts, test::LlamaCounts& counts) {
  const test::LlamaVocabModel llama(lib, file);
  GgufTokenizer remat = load_gguf_tokenizer(file);
  CHECK(remat.tokenizer->vocab_size() == llama.n_tokens());
  test::compare_with_llama(*remat.tokenizer, llama, texts, counts, true);
}

}  // namespace

TEST_CASE(
    "GGUF SentencePiece tokenizer: remat's ids and decoded text equal llama.cpp's on Gemma 3's "
    "and Llama 2's vocabularies") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source() || !test::have_spm_sources()) return;
  const test::TempFolder folder("gguf_tokenizer_spm");
  const auto texts = spm_texts();
  const JsonValue conversations = parse_json(test::chat_conversations());
  test::LlamaCounts counts;
  for (const test::GgufSample& s : test::write_spm_samples(folder)) {
    INFO(s.name);
    std::vector<test::CorpusText> all = texts;
    // Gemma 3's own template, rendered: its special tokens encode alike.
    const GgufTokenizer gguf = load_gguf_tokenizer(s.gguf);
    if (!gguf.chat.source.empty()) {
      const text::ChatTemplate chat(gguf.chat.source);
      for (const JsonValue& c : conversations.array) {
        text::ChatOptions options = gguf.chat.options;
        options.add_generation_prompt = c.find("add_generation_prompt")->boolean;
        try {
          all.push_back({"chat", chat.render(*c.find("messages"), options)});
        } catch (const std::exception&) {
          // Gemma's template refuses conversations whose roles do not alternate.
        }
      }
    }
    compare_file(*lib, s.gguf, all, counts);
  }
  INFO(counts.texts << " texts, " << counts.ids << " ids, " << counts.decoded << " decoded");
  CHECK(counts.texts >= 4 * 45);
  CHECK(counts.decoded == 3 * counts.texts);
}

TEST_CASE(
    "GGUF SentencePiece tokenizer: remat's ids and decoded text equal llama.cpp's on llama.cpp's "
    "SentencePiece test vocabularies") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source()) return;
  const auto texts = spm_texts();
  test::LlamaCounts counts;
  for (const std::string& name : test::llama_spm_test_vocabularies()) {
    INFO(name);
    const fs::path file = test::llama_test_vocabulary(name);
    std::vector<test::CorpusText> all = texts;
    if (fs::exists(file.string() + ".inp"))
      for (const test::VocabTest& t : test::llama_vocabulary_tests(file))
        all.push_back({"llama.cpp's test text '" + t.text.substr(0, 40) + "'", t.text});
    compare_file(*lib, file, all, counts);
  }
  INFO(counts.texts << " texts, " << counts.ids << " ids");
  CHECK(counts.texts >= 2 * 50);
  CHECK(counts.decoded == 3 * counts.texts);
}

TEST_CASE(
    "GGUF SentencePiece tokenizer: where special tokens overlap in a text the longer wins, as in "
    "llama.cpp") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source()) return;
  // Llama 2's vocabulary with "at" a control token and "tion" a user-defined one: in "ation" the
  // longer "tion" is cut out although "at" starts first.
  GgufMetadata m = GgufFile::open(test::llama_test_vocabulary("llama-spm")).metadata();
  const auto tokens = *m.strings("tokenizer.ggml.tokens");
  auto types = *m.int32s("tokenizer.ggml.token_type");
  const auto id_of = [&](const std::string& t) {
    const auto it = std::find(tokens.begin(), tokens.end(), t);
    REQUIRE(it != tokens.end());
    return std::size_t(it - tokens.begin());
  };
  types[id_of("at")] = 3;
  types[id_of("tion")] = 4;
  m.set("tokenizer.ggml.token_type", GgufValue::array(types));
  const test::TempFolder folder("gguf_spm_overlap");
  const fs::path file = folder.path() / "overlap.gguf";
  GgufWriter(file, m, {}).commit();
  const std::vector<test::CorpusText> texts = {
      {"overlap", "ation"}, {"both", "nation at tion attion ationat"}, {"plain", "station"}};
  test::LlamaCounts counts;
  compare_file(*lib, file, texts, counts);
  const GgufTokenizer remat = load_gguf_tokenizer(file);
  const auto ids = remat.tokenizer->encode("ation");
  REQUIRE(ids.size() == 2);
  CHECK(ids[1] == id_of("tion"));
}
