#include "cli_args.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace remat::cli {

Args::Args(std::vector<std::string> argv, std::set<std::string> value_flags,
           std::set<std::string> bool_flags, std::size_t max_positionals) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      if (positionals_.size() >= max_positionals)
        throw UsageError("unexpected argument '" + a + "'; see --help");
      positionals_.push_back(a);
      continue;
    }
    std::string name = a;
    std::optional<std::string> value;
    if (auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (bool_flags.count(name)) {
      if (value) throw UsageError("flag " + name + " takes no value");
      bools_.insert(name);
      continue;
    }
    if (!value_flags.count(name)) throw UsageError("unknown flag '" + name + "'; see --help");
    if (values_.count(name)) throw UsageError("flag " + name + " given twice");
    if (!value) {
      if (i + 1 >= argv.size() || (argv[i + 1].rfind("--", 0) == 0 && argv[i + 1].size() > 2))
        throw UsageError("flag " + name + " needs a value");
      value = argv[++i];
    }
    values_[name] = *value;
  }
}

bool Args::has(const std::string& flag) const {
  return bools_.count(flag) || values_.count(flag);
}

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> Args::get_int(const std::string& flag, int64_t min, int64_t max) const {
  auto v = get(flag);
  if (!v) return std::nullopt;
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || p != v->data() + v->size() || v->empty())
    throw UsageError(flag + " must be an integer, got '" + *v + "'");
  if (out < min || out > max)
    throw UsageError(flag + " must be between " + std::to_string(min) + " and " +
                     std::to_string(max) + ", got " + *v);
  return out;
}

std::optional<double> Args::get_double(const std::string& flag) const {
  auto v = get(flag);
  if (!v) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(v->c_str(), &end);
  if (v->empty() || end != v->c_str() + v->size() || !std::isfinite(d))
    throw UsageError(flag + " must be a finite number, got '" + *v + "'");
  return d;
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

}  // namespace remat::cli
