// A SentencePiece GGUF tokenizer (tokenizer.ggml.model "llama") read from its keys
// (formats/gguf_tokenizer.h): scores, types, add_space_prefix and llama.cpp's defaults for the
// keys a file leaves out; the chat template's bos and eos text; and what cannot be read, refused in
// one line naming the key. The comparison with llama.cpp itself is
// gguf_tokenizer_spm_llama_test.cpp.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/json.h"
#include "formats/gguf_tokenizer.h"
#include "text/bpe_symbols.h"
#include "text/chat_examples.h"
#include "text/jsonl_examples.h"

using namespace remat;
using Ids = std::vector<uint32_t>;

namespace {

// <unk>, <s>, </s>, the 256 byte tokens, "▁", "h", "i", "hi" and "▁hi", <start_of_turn>
// (control), <br> (user-defined) and "ih", with no bos, eos or add_* keys.
GgufMetadata small_spm() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(text::byte_fallback_token(uint8_t(b)));
    types.push_back(6);
    scores.push_back(0);
  }
  const std::vector<std::pair<std::string, float>> pieces = {
      {"\u2581", -1}, {"h", -2}, {"i", -3}, {"hi", -5}, {"\u2581hi", -4}};
  for (const auto& [t, score] : pieces) {
    tokens.push_back(t);
    types.push_back(1);
    scores.push_back(score);
  }
  tokens.insert(tokens.end(), {"<start_of_turn>", "<br>", "ih"});
  types.insert(types.end(), {3, 4, 1});
  scores.insert(scores.end(), {0, 0, -6});
  GgufMetadata m("spm.gguf");
  m.set("general.architecture", GgufValue::of("llama"));
  m.set("tokenizer.ggml.model", GgufValue::of("llama"));
  m.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
  m.set("tokenizer.ggml.scores", GgufValue::array(scores));
  m.set("tokenizer.ggml.token_type", GgufValue::array(types));
  m.set("tokenizer.chat_template", GgufValue::of("{{ bos_token }}{{ messages[0]['content'] }}"
                                                 "{{ eos_token }}"));
  return m;
}

constexpr uint32_t kSpace = 259, kH = 260, kI = 261, kHi = 262, kSpaceHi = 263, kTurn = 264,
                   kBr = 265, kIh = 266;

std::string refusal(const GgufMetadata& m) {
  try {
    gguf_tokenizer(m);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(loaded)";
}

}  // namespace

TEST_CASE("GGUF SentencePiece tokenizer: scores, types and llama.cpp's defaults for absent keys") {
  const GgufTokenizer t = gguf_tokenizer(small_spm());
  text::Tokenizer& tok = *t.tokenizer;
  CHECK(tok.vocab_size() == 267);
  // A space before the text (add_space_prefix defaults to true), and before the text after each
  // special token; "hi" (-5) beats "ih" (-6), then joins the space.
  CHECK(tok.encode("hi") == Ids{kSpaceHi});
  CHECK(tok.encode("hih") == Ids{kSpaceHi, kH});
  CHECK(tok.encode("hi<start_of_turn>hi hi") == Ids{kSpaceHi, kTurn, kSpaceHi, kSpaceHi});
  // Control tokens with special tokens on only, user-defined ones always; "x" falls back to bytes.
  CHECK(tok.encode("<br>x", false) == Ids{kBr, kSpace, 3 + 'x'});
  CHECK(tok.encode("<start_of_turn>", false).size() == 16);
  // add_bos_token defaults to true with bos 1, and the chat template gets <s> and </s>.
  CHECK(tok.post_processor().apply({kH}) == Ids{1, kH});
  CHECK(t.chat.options.bos_token == "<s>");
  CHECK(t.chat.options.eos_token == "</s>");
  CHECK(tok.decode({1, kSpaceHi, kSpace, kH, kI, kTurn, kBr}) == "<s> hi hi<start_of_turn><br>");
  CHECK(tok.decode({kSpaceHi, kSpace, kH}) == "hi h");

  GgufMetadata m = small_spm();
  m.set("tokenizer.ggml.add_space_prefix", GgufValue::of(false));
  m.set("tokenizer.ggml.add_bos_token", GgufValue::of(false));
  m.set("tokenizer.ggml.add_eos_token", GgufValue::of(true));
  m.set("tokenizer.ggml.bos_token_id", GgufValue::of(uint32_t(kTurn)));
  m.set("tokenizer.ggml.eos_token_id", GgufValue::of(uint32_t(9999)));  // no token: default 2
  // Scores as int32, as llama.cpp also reads them: now "ih" beats "hi".
  std::vector<int32_t> scores(267, 0);
  scores[kSpace] = -1, scores[kH] = -2, scores[kI] = -3, scores[kHi] = -4, scores[kSpaceHi] = -5;
  scores[kIh] = -1;
  m.set("tokenizer.ggml.scores", GgufValue::array(scores));
  const GgufTokenizer u = gguf_tokenizer(m);
  CHECK(u.tokenizer->encode("hih") == Ids{kH, kIh});
  CHECK(u.tokenizer->encode("hi hi") == Ids{kHi, kSpaceHi});
  CHECK(u.tokenizer->post_processor().apply({kH}) == Ids{kH, 2});
  CHECK(u.chat.options.bos_token == "<start_of_turn>");
  CHECK(u.chat.options.eos_token == "</s>");
  CHECK(u.tokenizer->decode({kSpace, kHi}) == " hi");
}

TEST_CASE(
    "GGUF SentencePiece tokenizer: chat examples train the assistant turns, space prefix and "
    "all") {
  // With add_space_prefix the decoded text has a space after each special token that the
  // rendered text lacks: where tokens begin comes from the encoding itself.
  GgufMetadata m = small_spm();
  m.set("tokenizer.chat_template",
        GgufValue::of("{% for m in messages %}{% if m.role == 'user' %}<s>{{ m.content }}"
                      "{% else %}<start_of_turn>{{ m.content }}</s>{% endif %}{% endfor %}"
                      "{% if add_generation_prompt %}<start_of_turn>{% endif %}"));
  GgufTokenizer t = gguf_tokenizer(m);
  auto examples = text::chat_examples_with(*t.tokenizer, t.chat, "spm.gguf", std::nullopt);
  const auto parsed = text::parse_jsonl_examples(
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hih"}]})",
      "chat.jsonl");
  const auto encoded = examples.encode_all(parsed, "chat.jsonl");
  REQUIRE(encoded.size() == 1);
  // "<s>hi<start_of_turn>hih</s>": " hi" and " hih" get their spaces.
  CHECK(encoded[0].ids == Ids{1, kSpaceHi, kTurn, kSpaceHi, kH, 2});
  CHECK(encoded[0].mask == std::vector<uint8_t>{0, 0, 0, 1, 1, 1});
  CHECK(t.tokenizer->encoded_starts("<s>hi<start_of_turn>hih</s>") ==
        std::vector<std::size_t>{0, 3, 5, 20, 22, 23});
}

TEST_CASE(
    "GGUF SentencePiece tokenizer: what cannot be read is refused in one line naming the key") {
  REQUIRE(refusal(small_spm()) == "(loaded)");
  const auto with = [](const char* key, GgufValue v) {
    GgufMetadata m = small_spm();
    m.set(key, std::move(v));
    return m;
  };
  const std::vector<std::pair<GgufMetadata, std::string>> cases = {
      {with("tokenizer.ggml.scores", GgufValue::array(std::vector<float>{0, 0})),
       "spm.gguf: tokenizer.ggml.scores has 2 entries for 267 tokens"},
      {with("tokenizer.ggml.scores", GgufValue::array(std::vector<std::string>{"a"})),
       "spm.gguf: tokenizer.ggml.scores is not an array of float32 or int32, as llama.cpp reads "
       "it"},
      {with("tokenizer.ggml.tokens", GgufValue::array(std::vector<std::string>{"a", "b", "a"})),
       "spm.gguf: tokenizer.ggml.tokens: tokens 0 and 2 are both 'a'"},
      {with("tokenizer.ggml.tokens", GgufValue::array(std::vector<std::string>{})),
       "spm.gguf: tokenizer.ggml.tokens is empty"},
      {with("general.name", GgufValue::of("Phi-3 mini")),
       "spm.gguf: general.name 'Phi-3 mini' gets llama.cpp's strip rules"}};
  for (const auto& [m, message] : cases) {
    const std::string got = refusal(m);
    INFO(got);
    CHECK(got.rfind(message, 0) == 0);
    CHECK(got.find('\n') == std::string::npos);
  }
  // A vocabulary without byte tokens loads; a text that needs one is refused when encoded.
  GgufMetadata m = small_spm();
  std::vector<std::string> tokens = *m.strings("tokenizer.ggml.tokens");
  tokens[3 + 'x'] = "[no x]";
  m.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
  CHECK_THROWS_WITH(gguf_tokenizer(m).tokenizer->encode("x"),
                    Catch::Contains("needs byte 0x78 as a token"));
}
