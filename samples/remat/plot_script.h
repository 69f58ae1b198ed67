// Drawing a bench result with one of the python3 + matplotlib scripts in samples/.
#pragma once

#include <filesystem>
#include <string>

namespace remat::cli {

// Runs samples/<script> JSON PNG with Debian's python3 and prints "plot     PNG"; when python3
// with matplotlib or the script is missing, prints the command that would make it instead.
void make_plot(const std::string& script, const std::filesystem::path& json_path,
               const std::filesystem::path& png);

}  // namespace remat::cli
