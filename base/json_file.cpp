#include "base/json_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace remat {

JsonValue read_json_file(const std::filesystem::path& path) {
  auto fail = [&](const std::string& what) {
    return std::invalid_argument(path.string() + ": " + what);
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw fail("is a folder, not a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail(std::string("cannot read (") + std::strerror(errno) + ")");
  // Configs and shard indexes are kilobytes; a huge file is a mistake, not something to load.
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > (100u << 20)) throw fail("is " + std::to_string(size) + " bytes, too large");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return parse_json(text.str());
  } catch (const std::invalid_argument& e) {
    throw fail(std::string("not valid JSON: ") + e.what());
  }
}

}  // namespace remat
