// Command-line parsing shared by the `remat` subcommands: flags, sizes, and the error contract
// (one line on stderr starting "remat: error:", exit status 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace remat::cli {

// Bad user input. main() prints "remat: error: <what>" and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One flag a command accepts, declared once: parsing, --help and defaults all read this entry.
struct FlagSpec {
  std::string name;           // "--lr"
  std::string value;          // what it takes, e.g. "RATE"; empty for a boolean flag
  std::string help;           // one line
  std::string default_value;  // an absent flag's value as a user would type it ("3e-4"); for
                              // display only when it is prose ("the model's ctx")
};

// A subcommand's interface: `remat <name> <operands> [options]`, then the description, then the
// flags. --help/-h is implied.
struct CommandSpec {
  std::string name;                 // "train"
  std::string operands;             // "[MODEL]", or empty
  std::size_t max_positionals = 0;  // how many bare arguments it takes
  std::string description;          // paragraphs, each line ending in '\n'
  std::vector<FlagSpec> flags;      // in the order --help lists them
};

// The --help text, generated from the spec.
std::string usage_text(const CommandSpec& spec);
// --help or -h anywhere among the arguments.
bool help_requested(const std::vector<std::string>& argv);
// When help is requested: prints usage_text(spec) to stdout and returns true.
bool print_help_if_requested(const std::vector<std::string>& argv, const CommandSpec& spec);

// Parses "--name value", "--name=value" and boolean "--name" flags against a command's declared
// flags. Unknown flags (named in the error), missing values and repeated flags are UsageErrors.
class Args {
 public:
  Args(std::vector<std::string> argv, const CommandSpec& spec);

  bool has(const std::string& flag) const;
  std::optional<std::string> get(const std::string& flag) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  // Typed getters; a malformed value is a UsageError naming the flag.
  std::optional<int64_t> get_int(const std::string& flag, int64_t min, int64_t max) const;
  std::optional<double> get_double(const std::string& flag) const;
  std::optional<uint64_t> get_size(const std::string& flag) const;

  // The value given, or else the flag's declared default (a std::logic_error when it declares
  // none), so --help states exactly what an absent flag means.
  std::string get_or_default(const std::string& flag) const;
  int64_t get_int_or_default(const std::string& flag, int64_t min, int64_t max) const;
  double get_double_or_default(const std::string& flag) const;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> bools_;
  std::vector<std::string> positionals_;
  std::map<std::string, std::string> defaults_;
};

// "48MiB", "1.5GiB", "4096", "10MB", "2k"? Bytes or KiB/MiB/GiB/TiB (1024-based) or
// KB/MB/GB/TB (1000-based); case-insensitive units, optional space, fractional values allowed.
// Throws UsageError for anything else, zero, or negative values.
uint64_t parse_size(std::string_view text, std::string_view what);

// An output must name a file (check_output_path) or a folder, existing or not
// (check_output_folder), in an existing, writable folder: UsageError naming `flag` otherwise.
// Checked before anything runs, so a typo fails at once instead of after training.
void check_output_path(const std::string& path, const std::string& flag);
void check_output_folder(const std::string& path, const std::string& flag);
// What an existing path that is no folder is, for those messages: "a file", "a FIFO", ...
std::string existing_kind(const std::string& path);

// "12.3 MiB" style, for humans.
std::string format_bytes(uint64_t bytes);

}  // namespace remat::cli
