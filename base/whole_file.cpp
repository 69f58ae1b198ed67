#include "base/whole_file.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace remat {

std::string read_whole_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::invalid_argument(path.string() + ": is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path.string() + ": cannot read (missing or no permission)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace remat
