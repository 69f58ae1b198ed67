// Runs a command line (through /bin/sh) and captures its exit status, stdout and stderr, for
// tests that drive the `remat` binary as a user would.
#pragma once

#include <string>

namespace remat::test {

struct CommandResult {
  int exit_code = -1;  // the process's exit status; 128+N when killed by signal N
  std::string out;     // everything written to stdout
  std::string err;     // everything written to stderr
};

CommandResult run_command(const std::string& command_line);

// The built `remat` binary followed by `args` (already shell-quoted where needed).
// REMAT_CLI_PATH is defined by tests/CMakeLists.txt for every test executable when the runtime
// (and so the CLI) is built; a pure build (-DREMAT_RUNTIME=OFF) has no binary to run.
#ifdef REMAT_CLI_PATH
inline CommandResult run_remat(const std::string& args) {
  return run_command(std::string("'") + REMAT_CLI_PATH + "' " + args);
}
#endif

}  // namespace remat::test
