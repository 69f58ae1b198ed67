#include "tests/support/run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace remat::test {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

CommandResult run_command(const std::string& command_line) {
  char out_path[] = "/tmp/remat_test_out_XXXXXX";
  char err_path[] = "/tmp/remat_test_err_XXXXXX";
  const int out_fd = mkstemp(out_path);
  const int err_fd = mkstemp(err_path);
  close(out_fd);
  close(err_fd);
  const std::string full = command_line + " >" + out_path + " 2>" + err_path + " </dev/null";
  const int status = std::system(full.c_str());
  CommandResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::remove(out_path);
  std::remove(err_path);
  return r;
}

}  // namespace remat::test
