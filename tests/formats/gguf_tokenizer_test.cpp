// The tokenizer and chat template of a GGUF file (formats/gguf_tokenizer.h, and the path-based
// choice of formats/tokenizer_source.h): the vocabularies of llama.cpp's own tokenizer tests give
// the ids Hugging Face gives their test texts; a file remat cannot read is refused in one line
// naming the key; the chat template and its bos and eos tokens come from the file.
#include "formats/gguf_tokenizer.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "base/json.h"
#include "formats/gguf_writer.h"
#include "formats/tokenizer_source.h"
#include "tests/formats/gguf_tokenizer_files.h"
#include "text/byte_unicode.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

// A small "gpt2" tokenizer: the 256 bytes, "ab" and "abc", <|im_start|>, <|im_end|> and <|end|>
// (control), <think> (user-defined), an unused [PAD261].
GgufMetadata small_tokenizer() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b)
    tokens.push_back(text::bytes_to_unicode_text(std::string(1, char(b))));
  for (const char* t : {"ab", "abc", "<|im_start|>", "<|im_end|>", "<think>", "[PAD261]"})
    tokens.push_back(t);
  std::vector<int32_t> types(tokens.size(), 1);
  types[258] = types[259] = 3;
  types[260] = 4;
  types[261] = 5;
  GgufMetadata m("small.gguf");
  m.set("general.architecture", GgufValue::of("qwen2"));
  m.set("tokenizer.ggml.model", GgufValue::of("gpt2"));
  m.set("tokenizer.ggml.pre", GgufValue::of("qwen2"));
  m.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
  m.set("tokenizer.ggml.token_type", GgufValue::array(types));
  m.set("tokenizer.ggml.merges", GgufValue::array(std::vector<std::string>{"a b", "ab c"}));
  m.set("tokenizer.ggml.eos_token_id", GgufValue::of(uint32_t(259)));
  m.set("tokenizer.chat_template",
        GgufValue::of("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                      "{{ eos_token }}\n{% endfor %}"));
  return m;
}

std::string refusal(const GgufMetadata& m) {
  try {
    gguf_tokenizer(m);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(loaded)";
}

}  // namespace

TEST_CASE(
    "GGUF tokenizer: llama.cpp's test vocabularies give the ids Hugging Face gives their "
    "test texts") {
  if (!test::have_llama_cpp_source()) return;
  std::size_t texts = 0;
  for (const std::string& name : test::llama_test_vocabularies()) {
    const fs::path file = test::llama_test_vocabulary(name);
    INFO(file);
    auto tokenizer = load_gguf_tokenizer(file).tokenizer;
    for (const test::VocabTest& t : test::llama_vocabulary_tests(file)) {
      INFO("text '" << t.text << "'");
      // llama.cpp's test tokenizes with add_special and parse_special off.
      CHECK(tokenizer->encode(t.text, false) == t.ids);
      ++texts;
    }
  }
  CHECK(texts >= 9 * 46);
}

TEST_CASE(
    "GGUF tokenizer: WordPiece, Unigram and Gemma 4 files of llama.cpp's tests are refused "
    "naming tokenizer.ggml.model, Phi-3's naming its strip rules") {
  if (!test::have_llama_cpp_source()) return;
  for (const auto& [name, model] :
       {std::pair{"bert-bge", "bert"}, std::pair{"nomic-bert-moe", "t5"},
        std::pair{"gemma-4", "gemma4"}}) {
    const fs::path file = test::llama_test_vocabulary(name);
    CHECK_THROWS_WITH(load_tokenizer_from(file),
                      file.string() + ": tokenizer.ggml.model '" + model +
                          "' is not supported (remat reads byte-level BPE, 'gpt2', and "
                          "SentencePiece, 'llama', tokenizers)");
  }
  const fs::path phi3 = test::llama_test_vocabulary("phi-3");
  CHECK_THROWS_WITH(load_tokenizer_from(phi3),
                    phi3.string() +
                        ": general.name 'Phi3' gets llama.cpp's strip rules around "
                        "special tokens, which remat does not apply");
  // A pre-tokenizer remat does not reproduce, in a real file.
  const fs::path deepseek = test::llama_test_vocabulary("deepseek-llm");
  CHECK_THROWS_WITH(
      load_tokenizer_from(deepseek),
      Catch::StartsWith(deepseek.string() + ": tokenizer.ggml.pre 'deepseek-llm' is not supported "
                                            "(supported: gpt-2, "));
}

TEST_CASE(
    "GGUF tokenizer: a missing or mistyped key and an unknown pre-tokenizer are refused in "
    "one line naming the key") {
  const GgufMetadata good = small_tokenizer();
  REQUIRE(refusal(good) == "(loaded)");
  std::vector<std::pair<GgufMetadata, std::string>> cases;
  auto without = [&](const char* key) {
    GgufMetadata m = good;
    m.erase(key);
    return m;
  };
  auto with = [&](const char* key, GgufValue v) {
    GgufMetadata m = good;
    m.set(key, std::move(v));
    return m;
  };
  cases.push_back({without("tokenizer.ggml.model"),
                   "small.gguf: tokenizer.ggml.model is missing: the file holds no tokenizer"});
  cases.push_back({without("tokenizer.ggml.tokens"),
                   "small.gguf: tokenizer.ggml.tokens is missing: the file holds no vocabulary"});
  cases.push_back({without("tokenizer.ggml.merges"),
                   "small.gguf: tokenizer.ggml.merges is missing: a byte-level BPE tokenizer "
                   "needs them"});
  cases.push_back({with("tokenizer.ggml.pre", GgufValue::of("tekken")),
                   "small.gguf: tokenizer.ggml.pre 'tekken' is not supported (supported: "});
  cases.push_back({with("tokenizer.ggml.model", GgufValue::of("rwkv")),
                   "small.gguf: tokenizer.ggml.model 'rwkv' is not supported"});
  cases.push_back({with("tokenizer.ggml.tokens", GgufValue::of("a")),
                   "small.gguf: key 'tokenizer.ggml.tokens' is string"});
  cases.push_back({with("tokenizer.ggml.token_type", GgufValue::array(std::vector<int32_t>{1, 1})),
                   "small.gguf: tokenizer.ggml.token_type has 2 entries for 262 tokens"});
  cases.push_back({with("tokenizer.ggml.merges", GgufValue::array(std::vector<std::string>{"abc"})),
                   "small.gguf: tokenizer.ggml.merges[0] 'abc' is not two tokens"});
  cases.push_back({with("tokenizer.ggml.merges", GgufValue::array(std::vector<std::string>{"a x"})),
                   "small.gguf: tokenizer.ggml.tokens and tokenizer.ggml.merges: merge 1 ('a' "
                   "'x'): 'ax' is not in the vocabulary"});
  cases.push_back({with("general.name", GgufValue::of("Phi-3 mini")),
                   "small.gguf: general.name 'Phi-3 mini' gets llama.cpp's strip rules"});
  for (const auto& [m, message] : cases) {
    const std::string got = refusal(m);
    INFO(got);
    CHECK(got.rfind(message, 0) == 0);
    CHECK(got.find('\n') == std::string::npos);
  }
}

TEST_CASE(
    "GGUF tokenizer: the token types decide which tokens are special, and the file gives "
    "the chat template with its bos and eos tokens") {
  GgufTokenizer t = gguf_tokenizer(small_tokenizer());
  text::Tokenizer& tok = *t.tokenizer;
  CHECK(tok.vocab_size() == 262);
  // Control tokens with special tokens on only; the user-defined <think> always; the unused
  // [PAD261] is an ordinary token that BPE never makes.
  CHECK(tok.encode("abc<|im_start|>ab<think>") == std::vector<uint32_t>{257, 258, 256, 260});
  CHECK(tok.encode("<|im_end|><think>", false) ==
        std::vector<uint32_t>{'<', '|', 'i', 'm', '_', 'e', 'n', 'd', '|', '>', 260});
  CHECK(tok.encode("[PAD261]") == std::vector<uint32_t>{'[', 'P', 'A', 'D', '2', '6', '1', ']'});
  CHECK(tok.decode({258, 97, 261}) == "<|im_start|>a[PAD261]");
  // No add_bos_token, and qwen2's default adds nothing.
  CHECK(tok.post_processor().apply({97}) == std::vector<uint32_t>{97});
  CHECK(t.chat.options.bos_token.empty());
  CHECK(t.chat.options.eos_token == "<|im_end|>");
  const JsonValue messages = parse_json(R"([{"role": "user", "content": "hi"}])");
  CHECK(text::ChatTemplate(t.chat.source).render(messages, t.chat.options) ==
        "<|im_start|>user\nhi<|im_end|>\n");

  // The same through a file, as the CLI and the C API take it.
  const test::TempFolder folder("gguf_tokenizer_file");
  const fs::path file = folder.path() / "small.gguf";
  GgufMetadata m = small_tokenizer();
  GgufWriter(file, m, {}).commit();
  CHECK(load_tokenizer_from(file)->encode("abab") == std::vector<uint32_t>{256, 256});
  CHECK(load_chat_template_from(file).source == t.chat.source);
  auto examples = chat_examples_from(tok, file, std::nullopt);
  CHECK(examples.has_template());
  const text::MaskedTokens e =
      examples
          .encode_all(
              text::parse_jsonl_examples(R"({"messages": [{"role": "user", "content": "ab"}, )"
                                         R"({"role": "assistant", "content": "abc"}]})",
                                         "x.jsonl"),
              "x.jsonl")
          .at(0);
  CHECK(e.ids.size() > 4);
  // Without a template, the file says so.
  m.erase("tokenizer.chat_template");
  GgufWriter(file, m, {}).commit();
  CHECK_THROWS_WITH(load_chat_template_from(file),
                    file.string() + ": tokenizer.chat_template is missing");
  CHECK_FALSE(chat_examples_from(tok, file, std::nullopt).has_template());
}
