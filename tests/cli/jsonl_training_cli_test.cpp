// `remat train --data FILE.jsonl`: fine-tuning examples one per row, the cut and dropped examples
// reported as `remat tokenize --jsonl`'s masks say; a shuffled run stopped and resumed reads the
// same rows as one never stopped; malformed files and misplaced flags exit 2 before any step.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::run_remat;

namespace {

const std::string kSmall =
    "--layers 1 --dim 32 --heads 2 --vocab 50257 --ctx 16 --seq 16 --batch 2 --lr 1e-3 ";

// A light template, so that only long examples are cut.
constexpr const char* kChat =
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

// Every shape; some short, some cut, and some whose trained tokens all lie beyond --seq + 1.
std::string examples() {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    s += "{\"text\": \"Example " + n + " is a short text.\"}\n";
    s += "{\"prompt\": \"What is " + n + " plus one?\", \"completion\": \"" +
         std::to_string(i + 1) + "\"}\n";
    s += "{\"prompt\": \"A prompt long enough that its rendering alone runs past the seventeen "
         "tokens a row holds, number " +
         n + "\", \"completion\": \"ok\"}\n";
    s += "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", "
         "\"content\": \"Hi " +
         n +
         "\"}, {\"role\": \"assistant\", \"content\": \"Hello there, how can I help you today "
         "with anything at all?\"}]}\n";
  }
  return s;
}

struct Counts {
  std::size_t examples = 0, cut = 0, dropped = 0, first_dropped_line = 0, trained = 0;
};

// What rows of T+1 = 17 tokens keep, from each example's mask as remat tokenize --jsonl prints it.
Counts counts(const std::string& masks, const std::string& jsonl) {
  Counts c;
  std::istringstream in(masks), lines(jsonl);
  std::string line, source;
  for (std::size_t number = 1; std::getline(in, line) && std::getline(lines, source); ++number) {
    const remat::JsonValue mask = *remat::parse_json(line).find("mask");
    ++c.examples;
    c.cut += mask.array.size() > 17;
    std::size_t trained = 0;
    for (std::size_t t = 1; t < mask.array.size() && t < 17; ++t) trained += mask.array[t].number;
    if (trained == 0 && c.dropped++ == 0) c.first_dropped_line = number;
    c.trained += trained;
  }
  return c;
}

// Each step's "loss" from a --log-json file.
std::vector<std::string> losses(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"step\":") != std::string::npos) {
      const auto at = line.find("\"loss\":");
      out.push_back(line.substr(at, line.find(',', at) - at));
    }
  return out;
}

}  // namespace

TEST_CASE("remat train fine-tunes on JSONL examples, reporting the cut and dropped ones") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("jsonl_training");
  d.write("ft.jsonl", examples());
  d.write("val.jsonl", "{\"prompt\": \"1+1=\", \"completion\": \"2\"}\n{\"text\": \"held out\"}\n");
  d.write("chat.jinja", kChat);
  const std::string data = remat::test::gpt2_tokenizer_flag() + "--chat-template " +
                           d.quoted("chat.jinja") + " --data " + d.quoted("ft.jsonl") + " ";
  const auto masks =
      run_remat("tokenize " + remat::test::gpt2_tokenizer_flag() + "--chat-template " +
                d.quoted("chat.jinja") + " --jsonl " + d.quoted("ft.jsonl"));
  REQUIRE(masks.exit_code == 0);
  const Counts c = counts(masks.out, examples());
  REQUIRE(c.examples == 16);
  CHECK(c.dropped > 0);
  CHECK(c.cut > c.dropped);  // some are cut with trained targets left
  const auto r = run_remat("train " + kSmall + "--steps 3 " + data + "--val-data " +
                           d.quoted("val.jsonl") + " --val-batches 1");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(": 16 examples, " + std::to_string(c.cut) + " cut to --seq + 1 tokens, " +
                   std::to_string(c.dropped) + " dropped with no trained target left (the first " +
                   "at line " + std::to_string(c.first_dropped_line) + "); " +
                   std::to_string(c.trained) + " trained targets, unigram entropy") !=
        std::string::npos);
  CHECK(r.out.find("val.jsonl: 2 examples, 0 cut") != std::string::npos);
  CHECK(r.out.find("done     3 steps") != std::string::npos);
}

TEST_CASE("a shuffled JSONL run stopped and resumed reads the rows of one never stopped") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("jsonl_resume");
  d.write("ft.jsonl", examples());
  d.write("chat.jinja", kChat);
  const std::string run = "train " + kSmall + "--steps 6 --accum 2 --shuffle 11 " +
                          remat::test::gpt2_tokenizer_flag() + "--chat-template " +
                          d.quoted("chat.jinja") + " --data " + d.quoted("ft.jsonl") + " ";
  REQUIRE(run_remat(run + "--log-json " + d.quoted("whole.json")).exit_code == 0);
  REQUIRE(run_remat(run + "--stop-at 3 --save-state " + d.quoted("state") + " --log-json " +
                    d.quoted("first.json"))
              .exit_code == 0);
  const auto resumed =
      run_remat("train --resume " + d.quoted("state") + " --log-json " + d.quoted("second.json"));
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  auto parts = losses(d.read("first.json"));
  for (const auto& l : losses(d.read("second.json"))) parts.push_back(l);
  const auto whole = losses(d.read("whole.json"));
  REQUIRE(whole.size() == 6);
  CHECK(parts == whole);
  // Another seed reads other rows: the state refuses it.
  const auto other = run_remat("train --resume " + d.quoted("state") + " --shuffle 12");
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("--shuffle 12 differs from the state's 11") != std::string::npos);
}

TEST_CASE("bad JSONL training input exits 2 with one line, before any step") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("jsonl_training_errors");
  d.write("bad.jsonl", "{\"text\": \"fine\"}\n{\"prompt\": 3, \"completion\": \"x\"}\n");
  d.write("chat.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n");
  d.write("ok.jsonl", "{\"text\": \"fine\"}\n");
  d.write("plain.txt", std::string(200, 'a'));
  const std::string tok = remat::test::gpt2_tokenizer_flag();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {tok + "--data " + d.quoted("bad.jsonl"), "bad.jsonl: line 2: \"prompt\" is a number"},
      {tok + "--data " + d.quoted("chat.jsonl"),
       "chat.jsonl: line 1: a \"messages\" example needs"},
      {"--data " + d.quoted("ok.jsonl"), "JSONL examples need --tokenizer PATH"},
      {tok + "--data " + d.quoted("plain.txt") + " --shuffle 3", "--shuffle applies to JSONL"},
      {tok + "--data " + d.quoted("ok.jsonl") + " --val-data " + d.quoted("plain.txt"),
       "reads as tokens but --data as examples"},
  };
  for (const auto& [args, fragment] : cases) {
    const auto r = run_remat("train " + kSmall + "--steps 1 " + args);
    INFO(args << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("remat: error: ", 0) == 0);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(r.out.find("step ") == std::string::npos);
  }
}
