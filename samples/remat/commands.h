// The `remat` subcommands. Each takes the arguments after its name and returns the exit status;
// bad input is thrown as cli::UsageError (exit 2).
#pragma once

#include <string>
#include <vector>

namespace remat::cli {

int run_devices(const std::vector<std::string>& args);
int run_train(const std::vector<std::string>& args);
int run_plan(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_profile(const std::vector<std::string>& args);
int run_tokenize(const std::vector<std::string>& args);
int run_detokenize(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_ops(const std::vector<std::string>& args);
int run_chat_template(const std::vector<std::string>& args);

}  // namespace remat::cli
