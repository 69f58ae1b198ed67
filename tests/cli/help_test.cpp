// Every command's --help is generated from the flags it declares: each flag any command accepts
// must be listed in the --help of every command that accepts it, and every listed flag accepted.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/run_command.h"

using remat::test::run_remat;

namespace {

const char* const kCommands[] = {"devices", "train",    "plan",       "bench",    "profile",
                                 "ops",     "tokenize", "detokenize", "generate", "chat-template"};

// The flags a --help text lists: lines "  --name ...".
std::set<std::string> listed_flags(const std::string& help) {
  std::set<std::string> out;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    out.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  return out;
}

// Whether `command` knows `flag`: a trailing flag no command has makes every run stop in
// argument parsing, so nothing executes; an unknown `flag` is reported first.
bool accepts(const std::string& command, const std::string& flag) {
  const auto r = run_remat(command + " " + flag + "=x --no-such-flag-anywhere");
  REQUIRE(r.exit_code == 2);
  return r.err.find("unknown flag '" + flag + "'") == std::string::npos;
}

}  // namespace

TEST_CASE("every flag a command accepts appears in its --help, and only those") {
  std::set<std::string> all;
  std::map<std::string, std::set<std::string>> listed;
  for (const char* c : kCommands) {
    const auto r = run_remat(std::string(c) + " --help");
    INFO(c);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.rfind(std::string("usage: remat ") + c, 0) == 0);
    CHECK(r.out.find("  -h, --help") != std::string::npos);
    listed[c] = listed_flags(r.out);
    all.insert(listed[c].begin(), listed[c].end());
  }
  REQUIRE(all.size() > 20);
  for (const char* c : kCommands)
    for (const std::string& flag : all) {
      INFO(c << " " << flag);
      CHECK(accepts(c, flag) == (listed[c].count(flag) == 1));
    }
  // What the old hand-written usage left out.
  CHECK(listed["train"].count("--costs") == 1);
  CHECK(listed["train"].count("--model") == 1);
}

TEST_CASE("--help states the defaults the commands use") {
  const auto r = run_remat("train --help");
  REQUIRE(r.exit_code == 0);
  for (const char* line : {"--lr RATE", "(default 3e-4)", "--wd W", "--steps N", "(default 100)",
                           "--lr-schedule S", "(default constant)", "--warmup-steps W"})
    CHECK(r.out.find(line) != std::string::npos);
  const auto plan = run_remat("plan --help");
  CHECK(plan.out.find("--alignment BYTES") != std::string::npos);
  CHECK(plan.out.find("(default 256)") != std::string::npos);
}

TEST_CASE("an unknown flag is an error naming the flag and the command") {
  const auto r = run_remat("train --lerning-rate 1");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "remat: error: unknown flag '--lerning-rate' for remat train; see remat train "
        "--help\n");
}
