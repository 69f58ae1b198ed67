// `remat`: the command line. Subcommands live in <name>_command.cpp; this file only dispatches and
// turns errors into the contract: "remat: error: ..." on stderr, exit status 2 for bad input.
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "runtime/vulkan/error.h"

namespace {

struct Command {
  std::string_view name;
  int (*run)(const std::vector<std::string>&);
  std::string_view summary;
};

constexpr Command kCommands[] = {
    {"devices", remat::cli::run_devices, "list Vulkan devices and what each supports"},
    {"train", remat::cli::run_train, "train a GPT on a byte-level text file under an arena cap"},
    {"plan", remat::cli::run_plan, "plan a training step: memory, recompute, predicted time"},
    {"bench", remat::cli::run_bench, "measure the memory/time frontier, or kernels against peak"},
    {"profile", remat::cli::run_profile, "measure per-kernel costs into a --costs table"},
    {"tokenize", remat::cli::run_tokenize, "text to BPE token ids (GPT-2, Hugging Face, GGUF)"},
    {"detokenize", remat::cli::run_detokenize, "token ids back to the exact text"},
    {"chat-template", remat::cli::run_chat_template,
     "render a conversation with a Hugging Face chat template"},
    {"generate", remat::cli::run_generate, "continue a text prompt with a GPT-2 checkpoint"},
    {"ops", remat::cli::run_ops, "list each op kind's named inputs and outputs"},
};

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: remat <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands)
    std::fprintf(out, "  %-13.*s %.*s\n", int(c.name.size()), c.name.data(), int(c.summary.size()),
                 c.summary.data());
  std::fprintf(out, "\nrun 'remat <command> --help' for a command's options\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::string names;
    for (const auto& c : kCommands) names += (names.empty() ? "" : ", ") + std::string(c.name);
    std::fprintf(stderr, "remat: error: no command given; use one of %s (remat --help)\n",
                 names.c_str());
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    for (const auto& c : kCommands)
      if (c.name == name) return c.run(args);
    throw remat::cli::UsageError("unknown command '" + std::string(name) +
                                 "'; run 'remat --help' for the list");
  } catch (const remat::cli::UsageError& e) {
    std::fprintf(stderr, "remat: error: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    // The libraries throw invalid_argument for input a user can fix (bad model shape, budget
    // below the minimum plan): same contract as a bad flag.
    std::fprintf(stderr, "remat: error: %s\n", e.what());
    return 2;
  } catch (const remat::VulkanError& e) {
    std::fprintf(stderr, "remat: error: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remat: error: %s\n", e.what());
    return 1;
  }
}
