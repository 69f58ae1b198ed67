// Fine-tuning examples through a Gemma-style tokenizer (character-level BPE with a decoder): the
// trained tokens are found through the decoder, and a tokenizer that does not decode a text back
// (Llama 2's prefix space after each special token) is refused rather than masked wrongly.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/json.h"
#include "tests/text/piece_vocab.h"
#include "tests/text/temp_folder.h"
#include "text/chat_examples.h"
#include "text/jsonl_examples.h"
#include "text/tokenizer_files.h"

using namespace remat;

namespace {

const std::vector<std::string> kWords = {
    "\u2581the", "\u2581License", "\u2581is", "\u2581free", "\u2581world", "er", "\n\n"};
constexpr const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + ('model' if m.role == "
    "'assistant' else m.role) + '\\n' + m.content + '<end_of_turn>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}";
constexpr const char* kDecoder =
    R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
    "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}%s]})";

std::string decoder(const std::string& strip) {
  std::string d = kDecoder;
  d.replace(d.find("%s"), 2, strip);
  return d;
}

// The decoded text of the trained tokens.
std::string trained_text(const text::Tokenizer& t, const text::MaskedTokens& m) {
  std::vector<text::TokenId> ids;
  for (std::size_t i = 0; i < m.ids.size(); ++i)
    if (m.mask[i]) ids.push_back(m.ids[i]);
  return t.decode(ids);
}

}  // namespace

TEST_CASE("a Gemma-style tokenizer trains exactly the assistant's turn", "[text]") {
  test::TempFolder d("piece_chat");
  const test::PieceVocab v({"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"},
                           kWords);
  auto t = text::load_tokenizer(d.write(
      "gemma.json",
      v.json(R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})", "null",
             decoder(""), R"(, "fuse_unk": true, "byte_fallback": true)", true, 2)));
  text::ChatExamples examples(*t, {false, "<bos>", "<eos>"}, text::ChatTemplate(kTemplate),
                              "the test template");
  // JSONL: one example per line.
  const std::string jsonl =
      R"({"messages": [{"role": "user", "content": "Hello  world"}, )"
      R"({"role": "assistant", "content": " the License is free \ud83e\udd16 ok"}, )"
      R"({"role": "user", "content": "more?"}, {"role": "assistant", "content": "free"}]})"
      "\n"
      R"({"prompt": "the Lic", "completion": "ense is free"})";
  const auto parsed = text::parse_jsonl_examples(jsonl, "test");
  const auto m = examples.encode(parsed[0]);
  CHECK(trained_text(*t, m) ==
        " the License is free \xF0\x9F\xA4\x96 ok<end_of_turn>\nfree<end_of_turn>\n");
  // The prompt ends inside "\u2581License": training starts at the first token that begins past it.
  const auto pc = examples.encode(parsed[1]);
  CHECK(trained_text(*t, pc).rfind("ense is free", 0) == 0);
}

TEST_CASE("a tokenizer that does not decode a chat back is refused for masks", "[text]") {
  test::TempFolder d("piece_chat");
  const test::PieceVocab v({"<unk>", "<s>", "</s>", "<start_of_turn>", "<end_of_turn>"}, kWords);
  // Llama 2's pipeline: every text between special tokens gets a "\u2581", and only the first
  // one's space is stripped again.
  auto t = text::load_tokenizer(d.write(
      "llama2.json",
      v.json(R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
             {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})",
             "null", decoder(R"(, {"type": "Strip", "content": " ", "start": 1, "stop": 0})"),
             R"(, "fuse_unk": true, "byte_fallback": true)", false, 1)));
  text::ChatExamples examples(*t, {false, "<s>", "</s>"}, text::ChatTemplate(kTemplate),
                              "the test template");
  const auto parsed = text::parse_jsonl_examples(
      R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]})",
      "test");
  CHECK_THROWS_WITH(examples.encode(parsed[0]),
                    Catch::Contains("the tokenizer does not decode this example's text back"));
}
