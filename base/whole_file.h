// A small file read whole (vocabularies, templates, token files), with errors that name it.
#pragma once

#include <filesystem>
#include <string>

namespace remat {

// The bytes of `path`. std::invalid_argument "<path>: is a folder, not a file" or
// "<path>: cannot read (missing or no permission)".
std::string read_whole_file(const std::filesystem::path& path);

}  // namespace remat
