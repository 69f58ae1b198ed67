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

// Parses "--name value", "--name=value" and boolean "--name" flags against a declared set.
// Unknown flags, missing values and repeated flags are UsageErrors.
class Args {
 public:
  Args(std::vector<std::string> argv, std::set<std::string> value_flags,
       std::set<std::string> bool_flags = {}, std::size_t max_positionals = 0);

  bool has(const std::string& flag) const;
  std::optional<std::string> get(const std::string& flag) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  // Typed getters; a malformed value is a UsageError naming the flag.
  std::optional<int64_t> get_int(const std::string& flag, int64_t min, int64_t max) const;
  std::optional<double> get_double(const std::string& flag) const;
  std::optional<uint64_t> get_size(const std::string& flag) const;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> bools_;
  std::vector<std::string> positionals_;
};

// "48MiB", "1.5GiB", "4096", "10MB", "2k"? Bytes or KiB/MiB/GiB/TiB (1024-based) or
// KB/MB/GB/TB (1000-based); case-insensitive units, optional space, fractional values allowed.
// Throws UsageError for anything else, zero, or negative values.
uint64_t parse_size(std::string_view text, std::string_view what);

// "12.3 MiB" style, for humans.
std::string format_bytes(uint64_t bytes);

}  // namespace remat::cli
