// `remat chat-template`: the exact text of a conversation under a template file or a tokenizer
// folder's chat_template and special tokens; bad input exits 2 with one line.
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/run_command.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;

TEST_CASE("remat chat-template prints the rendered conversation exactly") {
  remat::test::TempFolder d("chat_template_cli");
  d.write("messages.json",
          R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi ✓"}])");
  d.write("chat.jinja",
          "{{ bos_token }}\n{% for m in messages %}\n  <{{ m.role }}>{{ m.content | trim }}{{ "
          "eos_token }}\n"
          "{% endfor %}\n{% if add_generation_prompt %}<assistant>{% endif %}\n");
  d.write(
      "model/tokenizer_config.json",
      R"({"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ bos_token }}{{ messages | length }}{{ eos_token }}"})");
  const std::string messages = " --messages " + d.quoted("messages.json");

  auto r = run_remat("chat-template --template " + d.quoted("chat.jinja") + messages);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  // As @huggingface/jinja renders it: the newline after `}}` stays, those after `%}` go.
  CHECK(r.out == "\n  <system>Be brief.\n  <user>Hi ✓\n");
  r = run_remat(
      "chat-template --add-generation-prompt --bos-token '<s>' --eos-token '|' --template " +
      d.quoted("chat.jinja") + messages);
  CHECK(r.out == "<s>\n  <system>Be brief.|\n  <user>Hi ✓|\n<assistant>");
  r = run_remat("chat-template --tokenizer " + d.quoted("model") + messages);
  CHECK(r.out == "<s>2</s>");
}

TEST_CASE("remat chat-template refuses bad input with one line and exit status 2") {
  remat::test::TempFolder d("chat_template_cli_errors");
  d.write("messages.json", R"([{"role": "user", "content": "x"}])");
  d.write("bad.jinja", "ok\n{% for %}");
  d.write("bad.json", "[{");
  const std::string tpl = " --template " + d.quoted("bad.jinja");
  const struct {
    std::string args, error;
  } cases[] = {
      {"--messages " + d.quoted("messages.json"), "--tokenizer DIR or --template FILE is required"},
      {tpl, "--messages FILE.json is required"},
      {tpl + " --messages " + d.quoted("messages.json"),
       "chat template: line 2, column 8: unexpected '%}'"},
      {tpl + " --messages " + d.quoted("bad.json"), "bad.json: not valid JSON"},
      {"--tokenizer " + d.quoted("") + " --messages " + d.quoted("messages.json"),
       "tokenizer_config.json"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const auto r = run_remat("chat-template " + c.args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
    CHECK(r.err.find(c.error) != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }
}
