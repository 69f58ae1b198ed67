// README.md's examples as a new user runs them from a fresh clone: the chat fine-tune on the
// shipped samples/data/chat.jsonl and samples/data/chatml.jinja, its command lines read from the
// README itself (with fewer steps and the state in a temporary folder), stopped and resumed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_command.h"
#include "tests/text/reference_data.h"
#include "tests/text/temp_folder.h"

using remat::test::run_command;

namespace {

const std::filesystem::path kSource = REMAT_SOURCE_DIR;

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

// The README command line that starts with `start`, its continuation lines joined and its
// trailing `# comment` dropped; "" when no line starts so.
std::string readme_command(const std::string& start) {
  std::ifstream in(kSource / "README.md");
  std::string line, command;
  while (std::getline(in, line)) {
    if (command.empty() && trimmed(line).rfind(start, 0) != 0) continue;
    line = trimmed(line);
    const bool continued = !line.empty() && line.back() == '\\';
    if (continued) line.pop_back();
    command += line;
    if (!continued) break;
  }
  if (const auto comment = command.find(" #"); comment != std::string::npos) command.erase(comment);
  return trimmed(command);
}

// `s` with every `from` replaced by `to`; fails the test when there is none.
std::string replaced(std::string s, const std::string& from, const std::string& to) {
  INFO("replacing '" << from << "' in: " << s);
  REQUIRE(s.find(from) != std::string::npos);
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// The loss a `step N/M  loss X ...` line of `out` prints for step `step`, or "".
std::string loss_at(const std::string& out, const std::string& step) {
  const auto at = out.find("\nstep " + step + "  loss ");
  if (at == std::string::npos) return "";
  const auto start = out.find("loss ", at) + 5;
  return out.substr(start, out.find(' ', start) - start);
}

}  // namespace

TEST_CASE("the README's chat fine-tune runs on the shipped files, stops and resumes") {
  if (!remat::test::have_gpt2_files()) return;
  remat::test::TempFolder d("readme_chat");
  const std::string gpt2 = readme_command("GPT2=");
  std::string train =
      readme_command("build/bin/remat train tiny --vocab 50257 --tokenizer $GPT2 --chat-template");
  std::string resume = readme_command("build/bin/remat train --resume run.state --save-state");
  INFO("README.md: " << gpt2 << "\n" << train << "\n" << resume);
  REQUIRE(!gpt2.empty());
  REQUIRE(!train.empty());
  REQUIRE(!resume.empty());
  // As typed in the repository's root, with the built binary and the state under `d`.
  const std::string remat = std::string("'") + REMAT_CLI_PATH + "'";
  const auto in_source = [&](const std::string& command) {
    return run_command("(cd '" + kSource.string() + "' && " + gpt2 + " && " + command + ")");
  };
  const auto ours = [&](std::string command, const std::string& state) {
    command = replaced(command, "build/bin/remat", remat);
    return replaced(command, "run.state", d.quoted(state));
  };
  const std::string whole = ours(replaced(train, "--steps 100", "--steps 6"), "whole");
  train = ours(replaced(train, "--steps 100", "--steps 4"), "run.state");
  resume = ours(resume, "run.state") + " --steps 6";

  const auto first = in_source(train);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("chat.jsonl: 36 examples, 2 cut to --seq + 1 tokens, 0 dropped") !=
        std::string::npos);
  CHECK(first.out.find("done     4 steps") != std::string::npos);
  CHECK(first.out.find("state    step 4 saved in") != std::string::npos);
  CHECK(std::filesystem::exists(d.path() / "run.state" / "state.json"));

  const auto second = in_source(resume);
  INFO(second.out << second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(second.out.find("run.state: step 4 of 6") != std::string::npos);
  CHECK(loss_at(second.out, "4/6").empty());
  CHECK(second.out.find("done     6 steps") != std::string::npos);
  CHECK(second.out.find("state    step 6 saved in") != std::string::npos);

  // The resumed steps are those of a run never stopped.
  const auto never_stopped = in_source(whole);
  INFO(never_stopped.out << never_stopped.err);
  REQUIRE(never_stopped.exit_code == 0);
  for (const std::string step : {"5/6", "6/6"}) {
    INFO("step " << step);
    CHECK(!loss_at(second.out, step).empty());
    CHECK(loss_at(second.out, step) == loss_at(never_stopped.out, step));
  }
}
