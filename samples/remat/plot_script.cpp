#include "plot_script.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace remat::cli {
namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// samples/<name> next to this source file, or above the executable (build/bin/remat).
std::optional<std::filesystem::path> plot_script(const std::string& name) {
  std::error_code ec;
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path().parent_path();
  if (std::filesystem::exists(here / name, ec)) return here / name;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (auto d = exe.parent_path(); !ec && !d.empty() && d != d.root_path(); d = d.parent_path())
    if (std::filesystem::exists(d / "samples" / name, ec)) return d / "samples" / name;
  return std::nullopt;
}

}  // namespace

void make_plot(const std::string& name, const std::filesystem::path& json_path,
               const std::filesystem::path& png) {
  const auto script = plot_script(name);
  const std::string how = "/usr/bin/python3 samples/" + name + " " + json_path.string() + " " +
                          png.string() +
                          " (needs python3-matplotlib: apt-get install python3-matplotlib)";
  // Debian's matplotlib lives under /usr/bin/python3, which may not be the first python3 on PATH.
  const std::string python =
      std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (!script || std::system((python + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) != 0) {
    std::printf("plot     skipped (python3 with matplotlib not found); make it with\n         %s\n",
                how.c_str());
    return;
  }
  const std::string cmd = python + " " + shell_quote(script->string()) + " " +
                          shell_quote(json_path.string()) + " " + shell_quote(png.string());
  if (std::system(cmd.c_str()) == 0)
    std::printf("plot     %s\n", png.string().c_str());
  else
    std::printf("plot     failed; run %s\n", how.c_str());
}

}  // namespace remat::cli
