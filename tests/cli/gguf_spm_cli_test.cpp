// A Gemma-3-shaped GGUF model with Gemma 3's SentencePiece vocabulary and chat template
// (tests/formats/gguf_gemma3_spm_model.h) from the command line: `remat tokenize`, `detokenize`
// and `chat-template --tokenizer M.gguf` read the file's tokenizer and template, the chat examples
// of samples/data/chat.jsonl get the ids libllama gives their rendered text, with the assistant
// turns trained, and `remat train --init M.gguf --lora 8 --data chat.jsonl` trains on them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "base/json.h"
#include "formats/gguf_tokenizer.h"
#include "tests/formats/gguf_gemma3_spm_model.h"
#include "tests/formats/llama_library.h"
#include "tests/support/run_command.h"
#include "text/chat_template.h"
#include "text/jsonl_examples.h"
#include "text/vocab_files.h"

using namespace remat;
using remat::test::run_remat;
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "' ";
}

std::string ids_line(const std::vector<uint32_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "\n";
}

std::vector<uint32_t> numbers(const JsonValue& array) {
  std::vector<uint32_t> out;
  for (const JsonValue& v : array.array) out.push_back(uint32_t(v.number));
  return out;
}

const fs::path kChats = fs::path(REMAT_SOURCE_DIR) / "samples/data/chat.jsonl";

}  // namespace

TEST_CASE(
    "a Gemma 3 GGUF's SentencePiece tokenizer and chat template from the command line: "
    "libllama's ids, and training on chat JSONL") {
  const test::LlamaLibrary* lib = test::llama_library();
  if (!lib || !test::have_llama_cpp_source() || !test::have_spm_sources()) return;
  const test::TempFolder d("gguf_spm_cli");
  const fs::path model = test::write_gemma3_spm_model(d);
  const test::LlamaVocabModel llama(*lib, model);

  // tokenize and detokenize: llama.cpp's ids and text.
  const std::string text = "<start_of_turn>user\nBonjour  à tous 👋\t<b>x</b>\xFF<end_of_turn>\n";
  d.write("in.txt", text);
  const auto ids = run_remat("tokenize --tokenizer " + quoted(model) + d.quoted("in.txt"));
  INFO(ids.err);
  REQUIRE(ids.exit_code == 0);
  CHECK(ids.out == ids_line(llama.tokenize(text, false, true)));
  const auto plain =
      run_remat("tokenize --no-special --tokenizer " + quoted(model) + d.quoted("in.txt"));
  CHECK(plain.out == ids_line(llama.tokenize(text, false, false)));
  d.write("ids.txt", ids.out);
  CHECK(run_remat("detokenize --tokenizer " + quoted(model) + d.quoted("ids.txt")).out == text);

  // chat-template: Gemma 3's own, with its <bos>.
  d.write("m.json", R"([{"role": "user", "content": "hi"}])");
  const auto chat = run_remat("chat-template --tokenizer " + quoted(model) + "--messages " +
                              d.quoted("m.json") + " --add-generation-prompt");
  INFO(chat.err);
  CHECK(chat.out == "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");

  // The examples of chat.jsonl: each conversation rendered with the file's template has
  // libllama's ids, and the trained tokens spell the assistant turns with their <end_of_turn>.
  const auto jsonl =
      run_remat("tokenize --tokenizer " + quoted(model) + "--jsonl " + quoted(kChats));
  INFO(jsonl.err);
  REQUIRE(jsonl.exit_code == 0);
  const GgufTokenizer gguf = load_gguf_tokenizer(model);
  const text::ChatTemplate gemma(gguf.chat.source);
  const auto examples = text::parse_jsonl_examples(text::read_file(kChats), kChats.string());
  std::size_t line = 0, at = 0, trained = 0;
  for (; at < jsonl.out.size(); ++line) {
    const std::size_t end = jsonl.out.find('\n', at);
    const JsonValue e = parse_json(jsonl.out.substr(at, end - at));
    at = end + 1;
    REQUIRE(line < examples.size());
    const std::string rendered = gemma.render(examples[line].messages, gguf.chat.options);
    const std::vector<uint32_t> got = numbers(*e.find("ids")), mask = numbers(*e.find("mask"));
    CHECK(got == llama.tokenize(rendered, false, true));
    std::vector<uint32_t> taught;
    std::string answers;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (mask[i]) taught.push_back(got[i]);
    for (const JsonValue& m : examples[line].messages.array)
      if (m.find("role")->string == "assistant")
        answers += m.find("content")->string + "<end_of_turn>\n";
    CHECK(gguf.tokenizer->decode(taught) == answers);
    trained += taught.size();
  }
  CHECK(line == 36);
  CHECK(trained > 36 * 3);

  // Training: the file's tokenizer and template read the examples; LoRA on the Gemma 3 model.
  const auto train = run_remat("train --init " + quoted(model) + "--lora 8 --data " +
                               quoted(kChats) + "--seq 64 --batch 2 --steps 2 --lr 1e-3");
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(train.out.find(": 36 examples") != std::string::npos);
  CHECK(train.out.find(" 2 steps: loss ") != std::string::npos);
}
