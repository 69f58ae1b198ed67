// The fine-tuning sample (samples/finetune.cpp) as an app developer runs it: weights from
// `remat train --save`, a text file, an arena cap that forces recompute, a few steps, a saved file
// that loads again and holds the fine-tuned weights; chat examples, one a row or packed several to
// a row (--pack), each read as `remat train` reads them.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/json_number.h"
#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::json_number;
using remat::test::run_command;
using remat::test::run_remat;

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Single-quoted for the shell (the temporary paths here hold no quotes).
std::string quoted(const std::filesystem::path& p) {
  std::string q = "'";
  q += p.string();
  q += "'";
  return q;
}

// A small text with a few repeated words: a loss the model can lower within a few steps.
void write_words(const std::filesystem::path& path) {
  const std::vector<std::string> words = {"the ", "planner ",    "keeps ",    "block ",   "inputs ",
                                          "and ", "recomputes ", "the rest ", "of each ", "step. "};
  std::ofstream f(path, std::ios::binary);
  uint32_t x = 12345;
  for (int i = 0; i < 600; ++i) {
    x = x * 1664525u + 1013904223u;  // a fixed LCG: the same file on every machine
    f << words[(x >> 16) % words.size()];
  }
}

// Each "step N loss L" line of the sample's output, as "N L".
std::vector<std::string> step_losses(const std::string& out) {
  std::vector<std::string> steps;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("step ")) steps.push_back(line.substr(5));
  return steps;
}

}  // namespace

TEST_CASE("the fine-tuning sample trains under an arena cap and saves weights that load") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("remat_finetune_sample_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto data = dir / "data.txt", weights = dir / "start.safetensors",
             out = dir / "tuned.safetensors", log = dir / "reload.json";

  write_words(data);

  // Start weights: a small GPT saved by `remat train` after one step.
  const std::string model = "--layers 2 --dim 32 --heads 2 --ctx 32";
  auto made = run_remat("train " + model + " --data " + quoted(data) +
                        " --steps 1 --quiet --save " + quoted(weights));
  INFO(made.out << made.err);
  REQUIRE(made.exit_code == 0);

  // The cap: every:1's arena at the sample's batch 4 × seq 32, well below storing everything.
  auto plan = run_remat("plan " + model + " --batch 4 --seq 32 --policy every:1 --json");
  auto full = run_remat("plan " + model + " --batch 4 --seq 32 --policy none --json");
  REQUIRE(plan.exit_code == 0);
  REQUIRE(full.exit_code == 0);
  const double cap = json_number(plan.out, "arena_bytes");
  REQUIRE(cap > 0);
  REQUIRE(cap < json_number(full.out, "arena_bytes"));

  const int steps = 12;
  auto r = run_command("'" REMAT_FINETUNE_SAMPLE_PATH "' " + quoted(weights) + " " + quoted(data) +
                       " " + std::to_string(static_cast<long long>(cap)) + " " +
                       std::to_string(steps) + " " + quoted(out));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);

  // The arena it planned fits the cap.
  const size_t at = r.out.find("; arena ");
  REQUIRE(at != std::string::npos);
  CHECK(std::strtod(r.out.c_str() + at + 8, nullptr) <= cap);

  // One finite loss per step, falling from the first step to the last.
  std::vector<double> losses;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    int step = 0;
    double loss = 0;
    if (std::sscanf(line.c_str(), "step %d loss %lf", &step, &loss) == 2) losses.push_back(loss);
  }
  REQUIRE(losses.size() == steps);
  for (double l : losses) CHECK(std::isfinite(l));
  CHECK(losses.back() < losses.front() - 0.1);

  // The saved file loads and holds the fine-tuned weights: its loss on the first batch is below
  // the sample's first loss on that batch.
  REQUIRE(std::filesystem::exists(out));
  CHECK(read_file(out) != read_file(weights));
  auto reload = run_remat("train --init " + quoted(out) + " --data " + quoted(data) +
                          " --steps 1 --quiet --log-json " + quoted(log));
  INFO(reload.out << reload.err);
  REQUIRE(reload.exit_code == 0);
  const double reloaded = json_number(read_file(log), "loss");
  CHECK(reloaded > 0);
  CHECK(reloaded < losses.front() - 0.1);

  std::filesystem::remove_all(dir);
}

TEST_CASE("the fine-tuning sample stopped with --state and run again matches one run bit for bit") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("remat_finetune_state_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto data = dir / "data.txt", weights = dir / "start.safetensors", state = dir / "state";
  write_words(data);
  REQUIRE(run_remat("train --layers 2 --dim 32 --heads 2 --ctx 32 --data " + quoted(data) +
                    " --steps 1 --quiet --save " + quoted(weights))
              .exit_code == 0);
  const std::string sample = "'" REMAT_FINETUNE_SAMPLE_PATH "' ";
  const std::string args = quoted(weights) + " " + quoted(data) + " 100000000 8 ";
  auto whole = run_command(sample + args + quoted(dir / "whole.safetensors"));
  INFO(whole.out << whole.err);
  REQUIRE(whole.exit_code == 0);
  auto first = run_command(sample + "--state " + quoted(state) + " --stop-after 5 " + args +
                           quoted(dir / "never.safetensors"));
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("state saved in " + state.string() + " at step 5 of 8") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "never.safetensors"));
  auto rest = run_command(sample + "--state " + quoted(state) + " " + args +
                          quoted(dir / "resumed.safetensors"));
  INFO(rest.out << rest.err);
  REQUIRE(rest.exit_code == 0);
  CHECK(rest.out.find("step 5 loss") == std::string::npos);
  CHECK(rest.out.find("step 6 loss") != std::string::npos);
  CHECK(read_file(dir / "resumed.safetensors") == read_file(dir / "whole.safetensors"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the fine-tuning sample explains its usage and fails cleanly on a bad file") {
  auto usage = run_command("'" REMAT_FINETUNE_SAMPLE_PATH "'");
  CHECK(usage.exit_code == 2);
  CHECK(usage.err.find("usage:") != std::string::npos);

  auto missing = run_command("'" REMAT_FINETUNE_SAMPLE_PATH
                             "' /nonexistent.safetensors "
                             "/nonexistent.txt 1000000 1 /tmp/remat_never_written.safetensors");
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("remat_finetune_sample: error:") != std::string::npos);
  CHECK(!std::filesystem::exists("/tmp/remat_never_written.safetensors"));
}

TEST_CASE("the fine-tuning sample trains on the tokens of a text given a tokenizer") {
  if (!remat::test::have_gpt2_files()) return;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("remat_finetune_tokens_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto weights = dir / "start.safetensors", bytes = dir / "bytes.safetensors",
             out = dir / "tuned.safetensors";
  const std::string text = quoted(dir / "words.txt");
  write_words(dir / "words.txt");
  const std::string tokenizer = quoted(remat::test::gpt2_files());
  const std::string model = "--layers 1 --dim 32 --heads 2 --ctx 32 ";
  REQUIRE(run_remat("train " + model + "--vocab 50257 --steps 1 --quiet --data " + text +
                    " --tokenizer " + tokenizer + " --save " + quoted(weights))
              .exit_code == 0);
  REQUIRE(
      run_remat("train " + model + "--steps 1 --quiet --data " + text + " --save " + quoted(bytes))
          .exit_code == 0);

  const std::string sample = "'" REMAT_FINETUNE_SAMPLE_PATH "' ";
  auto r = run_command(sample + quoted(weights) + " " + text + " 100000000 8 " + quoted(out) + " " +
                       tokenizer);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  double first = 0, last = 0;
  REQUIRE(std::sscanf(r.out.c_str() + r.out.find("\nloss ") + 1, "loss %lf -> %lf", &first,
                      &last) == 2);
  // GPT-2 ids: an untrained 50257-way softmax starts near ln 50257 = 10.8; on a text of a dozen
  // distinct tokens it falls step after step at the sample's lr 1e-3.
  CHECK(first > 9.0);
  CHECK(last < first - 0.3);

  // GPT-2 ids do not fit a byte-vocabulary model: refused before any step, nothing written.
  const auto refused = dir / "refused.safetensors";
  auto bad = run_command(sample + quoted(bytes) + " " + text + " 100000000 1 " + quoted(refused) +
                         " " + tokenizer);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("but the model's vocabulary has 256 ids") != std::string::npos);
  CHECK(bad.out.empty());
  CHECK_FALSE(std::filesystem::exists(refused));
  std::filesystem::remove_all(dir);
}

namespace {

// In `d`: a tokenizer folder as a model ships it (GPT-2's files and a configuration with a ChatML
// template), six short chats in chat.jsonl, and start.safetensors, a 1-layer model for them.
void write_chat_files(remat::test::TempFolder& d) {
  std::filesystem::create_directories(d.path() / "tok");
  for (const char* file : {"encoder.json", "vocab.bpe"})
    std::filesystem::copy_file(remat::test::gpt2_files() / file, d.path() / "tok" / file);
  d.write("tok/tokenizer_config.json",
          R"({"eos_token": "<|endoftext|>", "chat_template": "{% for m in messages %}{{ )"
          R"('<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endfor %}{% if )"
          R"(add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"})");
  std::string chat;
  for (int i = 0; i < 6; ++i)
    chat += R"({"messages": [{"role": "user", "content": "What is )" + std::to_string(i) +
            R"( plus one?"}, {"role": "assistant", "content": "It is )" + std::to_string(i + 1) +
            R"(."}]})"
            "\n";
  d.write("chat.jsonl", chat);
  REQUIRE(run_remat("train --layers 1 --dim 32 --heads 2 --ctx 64 --vocab 50257 --steps 1 --quiet "
                    "--data " +
                    d.quoted("chat.jsonl") + " --tokenizer " + d.quoted("tok") + " --save " +
                    d.quoted("start.safetensors"))
              .exit_code == 0);
}

}  // namespace

TEST_CASE("the fine-tuning sample trains on chat examples and resumes them bit for bit") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("finetune_chat");
  write_chat_files(d);
  const std::string tok = d.quoted("tok"), data = d.quoted("chat.jsonl");

  const std::string sample = "'" REMAT_FINETUNE_SAMPLE_PATH "' ";
  auto args = [&](const std::string& out) {
    return d.quoted("start.safetensors") + " " + data + " 400000000 6 " + d.quoted(out) + " " + tok;
  };
  auto whole = run_command(sample + args("whole.safetensors"));
  INFO(whole.out << whole.err);
  REQUIRE(whole.exit_code == 0);
  const std::vector<std::string> losses = step_losses(whole.out);
  REQUIRE(losses.size() == 6);

  // Its first step reads the rows `remat train` builds from the file: the same loss, over the
  // answers' tokens alone (a mean over every token of the row would differ).
  auto train = run_remat(
      "train --init " + d.quoted("start.safetensors") + " --data " + data + " --tokenizer " + tok +
      " --batch 4 --seq 64 --steps 1 --quiet --log-json " + d.quoted("log.json"));
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  char first[32];
  std::snprintf(first, sizeof first, "1 loss %.4f", json_number(d.read("log.json"), "loss"));
  CHECK(losses[0] == first);

  const std::string state = "--state " + d.quoted("state") + " ";
  auto stopped = run_command(sample + state + "--stop-after 2 " + args("never.safetensors"));
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(d.path() / "never.safetensors"));
  auto resumed = run_command(sample + state + args("resumed.safetensors"));
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.exit_code == 0);
  std::vector<std::string> both = step_losses(stopped.out);
  for (const std::string& s : step_losses(resumed.out)) both.push_back(s);
  CHECK(both == losses);
  CHECK(d.read("resumed.safetensors") == d.read("whole.safetensors"));

  // Without a tokenizer there is no template to read examples with: refused, nothing written.
  auto bare = run_command(sample + d.quoted("start.safetensors") + " " + data + " 400000000 1 " +
                          d.quoted("bare.safetensors"));
  CHECK(bare.exit_code == 1);
  CHECK(bare.err.find("JSONL examples need a TOKENIZER") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(d.path() / "bare.safetensors"));
}

TEST_CASE("the fine-tuning sample packs short examples with --pack as remat train --pack does") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("finetune_pack");
  write_chat_files(d);
  // Prompt/completion examples of about a dozen tokens: several fit a row of 64.
  std::string sums;
  for (int i = 0; i < 10; ++i)
    sums += R"({"prompt": "What is )" + std::to_string(i) +
            R"( plus one? ", "completion": "It is )" + std::to_string(i + 1) +
            R"(."})"
            "\n";
  d.write("sums.jsonl", sums);
  // GPT-2's files alone: no chat template, so a prompt and its completion are read as one text.
  const std::string tok = "'" + remat::test::gpt2_files().string() + "'",
                    data = d.quoted("sums.jsonl");
  const std::string sample = "'" REMAT_FINETUNE_SAMPLE_PATH "' ";
  auto args = [&](const std::string& out) {
    return d.quoted("start.safetensors") + " " + data + " 400000000 4 " + d.quoted(out) + " " + tok;
  };
  auto whole = run_command(sample + "--pack " + args("whole.safetensors"));
  INFO(whole.out << whole.err);
  REQUIRE(whole.exit_code == 0);
  CHECK(whole.out.find("rows: one example a row 10 (") != std::string::npos);
  CHECK(whole.out.find("training on packed rows") != std::string::npos);
  const std::vector<std::string> losses = step_losses(whole.out);
  REQUIRE(losses.size() == 4);

  // Its first step reads the packed rows `remat train --pack` builds from the file: the same loss.
  auto train = run_remat(
      "train --init " + d.quoted("start.safetensors") + " --data " + data + " --tokenizer " + tok +
      " --batch 4 --seq 64 --steps 1 --quiet --pack --log-json " + d.quoted("log.json"));
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  char first[32];
  std::snprintf(first, sizeof first, "1 loss %.4f", json_number(d.read("log.json"), "loss"));
  CHECK(losses[0] == first);
  auto plain = run_command(sample + args("plain.safetensors"));
  REQUIRE(plain.exit_code == 0);
  CHECK(step_losses(plain.out)[0] != losses[0]);

  // Stopped and resumed without --pack: the state says the rows are packed.
  const std::string state = "--state " + d.quoted("state") + " ";
  auto stopped = run_command(sample + state + "--stop-after 2 --pack " + args("never.safetensors"));
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  auto resumed = run_command(sample + state + args("resumed.safetensors"));
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.exit_code == 0);
  std::vector<std::string> both = step_losses(stopped.out);
  for (const std::string& s : step_losses(resumed.out)) both.push_back(s);
  CHECK(both == losses);
  CHECK(d.read("resumed.safetensors") == d.read("whole.safetensors"));

  // --pack on a text is refused before anything runs.
  d.write("words.txt", "the planner keeps block inputs and recomputes the rest of each step.");
  auto text =
      run_command(sample + "--pack " + d.quoted("start.safetensors") + " " + d.quoted("words.txt") +
                  " 400000000 1 " + d.quoted("text.safetensors") + " " + tok);
  CHECK(text.exit_code == 1);
  CHECK(text.err.find("--pack packs JSONL examples") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(d.path() / "text.safetensors"));
}
