// `remat tokenize --jsonl`: each example of a fine-tuning file as {"ids", "mask"}, uncut and in
// file order; a malformed line exits 2 with one line naming the file and the line.
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;

TEST_CASE("remat tokenize --jsonl prints each example's ids and loss mask") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("jsonl_cli");
  d.write("ft.jsonl",
          "{\"text\": \"Hello world\"}\n\n"
          "{\"prompt\": \"Hel\", \"completion\": \"lo world\"}\n"
          "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", "
          "\"content\": \"Yo\"}]}\n");
  d.write("chat.jinja",
          "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
          "{% if add_generation_prompt %}assistant:{% endif %}");
  const auto r = run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--jsonl " +
                           d.quoted("ft.jsonl") + " --chat-template " + d.quoted("chat.jinja"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // With a template, prompt/completion is a conversation: "user: Hel\nassistant: lo world\n"
  // whose P ends at "assistant:", so " lo", " world" and "\n" are trained.
  CHECK(r.out ==
        "{\"ids\":[15496,995,50256],\"mask\":[1,1,1]}\n"
        "{\"ids\":[7220,25,5053,198,562,10167,25,2376,995,198],\"mask\":[0,0,0,0,0,0,0,1,1,1]}\n"
        "{\"ids\":[7220,25,15902,198,562,10167,25,25455,198],\"mask\":[0,0,0,0,0,0,0,1,1]}\n");
  // Without one, prompt + completion: "Hello" starts in the prompt, " world" and eos are trained.
  const auto plain = run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--jsonl " +
                               d.quoted("ft.jsonl"));
  CHECK(plain.exit_code == 2);
  CHECK(plain.err.find("line 4: a \"messages\" example needs a chat template") !=
        std::string::npos);
  d.write("pc.jsonl", "{\"prompt\": \"Hel\", \"completion\": \"lo world\"}\n");
  CHECK(run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--jsonl " +
                  d.quoted("pc.jsonl"))
            .out == "{\"ids\":[15496,995,50256],\"mask\":[0,1,1]}\n");
}

TEST_CASE("a malformed JSONL line exits 2 naming the file and the line") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("jsonl_cli_errors");
  const auto fails = [&](const std::string& bad, const std::string& fragment,
                         const std::string& extra = "") {
    d.write("bad.jsonl", "{\"text\": \"fine\"}\n" + bad + "\n");
    const auto r = run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--jsonl " +
                             d.quoted("bad.jsonl") + extra);
    INFO(bad << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: " + (d.path() / "bad.jsonl").string() + ": line 2: ", 0) == 0);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(r.err.find('\n') == r.err.size() - 1);
    CHECK(r.out.empty());
  };
  fails("{\"text\": \"cut", "not JSON");
  fails("{\"prompt\": \"p\"}", "missing \"completion\"");
  fails("{\"text\": [\"x\"]}", "\"text\" is an array, not a string");
  fails("{\"messages\": [{\"role\": \"bot\", \"content\": \"x\"}]}",
        "messages[0].role 'bot' is not a known role");
  fails("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}",
        "a \"messages\" example needs a chat template");
  d.write("ok.jsonl", "{\"text\": \"x\"}\n");
  for (const std::string& args : {"--jsonl " + d.quoted("ok.jsonl") + " " + d.quoted("ok.jsonl"),
                                  "--jsonl " + d.quoted("ok.jsonl") + " --out x.bin",
                                  "--chat-template t.jinja " + d.quoted("ok.jsonl")}) {
    const auto r = run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + args);
    INFO(args << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
  }
}
