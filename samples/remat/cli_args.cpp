#include "cli_args.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "base/regular_file.h"

namespace remat::cli {

namespace {

const FlagSpec* find_flag(const CommandSpec& spec, const std::string& name) {
  for (const FlagSpec& f : spec.flags)
    if (f.name == name) return &f;
  return nullptr;
}

std::string flag_column(const FlagSpec& f) {
  return f.value.empty() ? f.name : f.name + " " + f.value;
}

}  // namespace

std::string usage_text(const CommandSpec& spec) {
  std::string s = "usage: remat " + spec.name;
  if (!spec.operands.empty()) s += " " + spec.operands;
  s += " [options]\n";
  if (!spec.description.empty()) s += "\n" + spec.description;
  s += "\noptions:\n";
  std::size_t width = std::string("-h, --help").size();
  for (const FlagSpec& f : spec.flags) width = std::max(width, flag_column(f).size());
  auto line = [&](const std::string& column, const std::string& help) {
    s += "  " + column + std::string(width - column.size() + 2, ' ') + help + "\n";
  };
  for (const FlagSpec& f : spec.flags)
    line(flag_column(f),
         f.help + (f.default_value.empty() ? "" : " (default " + f.default_value + ")"));
  line("-h, --help", "print this help");
  return s;
}

bool help_requested(const std::vector<std::string>& argv) {
  for (const std::string& a : argv)
    if (a == "--help" || a == "-h") return true;
  return false;
}

bool print_help_if_requested(const std::vector<std::string>& argv, const CommandSpec& spec) {
  if (!help_requested(argv)) return false;
  std::fputs(usage_text(spec).c_str(), stdout);
  return true;
}

Args::Args(std::vector<std::string> argv, const CommandSpec& spec) {
  for (const FlagSpec& f : spec.flags)
    if (!f.default_value.empty()) defaults_[f.name] = f.default_value;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      if (positionals_.size() >= spec.max_positionals)
        throw UsageError("unexpected argument '" + a + "'; see remat " + spec.name + " --help");
      positionals_.push_back(a);
      continue;
    }
    std::string name = a;
    std::optional<std::string> value;
    if (auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    const FlagSpec* f = find_flag(spec, name);
    if (!f)
      throw UsageError("unknown flag '" + name + "' for remat " + spec.name + "; see remat " +
                       spec.name + " --help");
    if (f->value.empty()) {
      if (value) throw UsageError("flag " + name + " takes no value");
      bools_.insert(name);
      continue;
    }
    if (values_.count(name)) throw UsageError("flag " + name + " given twice");
    if (!value) {
      if (i + 1 >= argv.size() || (argv[i + 1].rfind("--", 0) == 0 && argv[i + 1].size() > 2))
        throw UsageError("flag " + name + " needs a value");
      value = argv[++i];
    }
    values_[name] = *value;
  }
}

std::string Args::get_or_default(const std::string& flag) const {
  if (auto v = get(flag)) return *v;
  auto it = defaults_.find(flag);
  if (it == defaults_.end()) throw std::logic_error(flag + " declares no default");
  return it->second;
}

bool Args::has(const std::string& flag) const {
  return bools_.count(flag) || values_.count(flag);
}

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

namespace {

int64_t parse_int(const std::string& flag, const std::string& v, int64_t min, int64_t max) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty())
    throw UsageError(flag + " must be an integer, got '" + v + "'");
  if (out < min || out > max)
    throw UsageError(flag + " must be between " + std::to_string(min) + " and " +
                     std::to_string(max) + ", got " + v);
  return out;
}

double parse_double(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(d))
    throw UsageError(flag + " must be a finite number, got '" + v + "'");
  return d;
}

}  // namespace

std::optional<int64_t> Args::get_int(const std::string& flag, int64_t min, int64_t max) const {
  const auto v = get(flag);
  if (!v) return std::nullopt;
  return parse_int(flag, *v, min, max);
}

std::optional<double> Args::get_double(const std::string& flag) const {
  const auto v = get(flag);
  if (!v) return std::nullopt;
  return parse_double(flag, *v);
}

int64_t Args::get_int_or_default(const std::string& flag, int64_t min, int64_t max) const {
  const std::string v = get_or_default(flag);
  return parse_int(flag, v, min, max);
}

double Args::get_double_or_default(const std::string& flag) const {
  const std::string v = get_or_default(flag);
  return parse_double(flag, v);
}

std::optional<uint64_t> Args::get_size(const std::string& flag) const {
  auto v = get(flag);
  if (!v) return std::nullopt;
  return parse_size(*v, flag);
}

uint64_t parse_size(std::string_view text, std::string_view what) {
  const std::string s(text);
  auto bad = [&](const std::string& why) {
    return UsageError(std::string(what) + " " + why + ", got '" + s +
                      "'; use bytes or a size like 48MiB, 1.5GiB, 500MB");
  };
  char* end = nullptr;
  double number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(number)) throw bad("must be a size");
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "kib" || unit == "k")
    scale = 1024.0;
  else if (unit == "mib" || unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "t")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb")
    scale = 1e3;
  else if (unit == "mb")
    scale = 1e6;
  else if (unit == "gb")
    scale = 1e9;
  else if (unit == "tb")
    scale = 1e12;
  else
    throw bad("has an unknown unit '" + std::string(end) + "'");
  if (s.front() == '-' || number < 0) throw bad("must be positive");
  const double bytes = std::floor(number * scale);
  if (bytes < 1) throw bad("must be at least 1 byte");
  if (bytes > 9.0e18) throw bad("is too large");
  return static_cast<uint64_t>(bytes);
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

namespace {

void check_parent_writable(const std::filesystem::path& path, const std::string& flag) {
  std::error_code ec;
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError(dir.string() + ": no such folder for " + flag +
                     "; create it first or give a path in an existing folder");
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(dir.string() + ": folder is not writable; give " + flag +
                     " a path in a writable folder");
}

}  // namespace

void check_output_path(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(path + ": is a directory; " + flag + " needs a file path");
  require_replaceable_file(path);  // a device or FIFO: refused before anything runs
  check_parent_writable(path, flag);
}

std::string existing_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "a file";
  return file_kind(st.st_mode);
}

void check_output_folder(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec))
    throw UsageError(path + ": is not a folder (" + existing_kind(path) + "); " + flag +
                     " needs a folder path");
  check_parent_writable(path, flag);
}

}  // namespace remat::cli
