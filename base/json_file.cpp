#include "base/json_file.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "base/regular_file.h"
#include "base/whole_file.h"

namespace remat {

JsonValue read_json_file(const std::filesystem::path& path) {
  auto fail = [&](const std::string& what) {
    return std::invalid_argument(path.string() + ": " + what);
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw fail("is a folder, not a JSON file");
  // Configs and shard indexes are kilobytes; a huge file is a mistake, not something to load.
  constexpr uint64_t kLimit = 100u << 20;
  const RegularFile file(path);
  if (file.size() > kLimit) throw fail("is " + std::to_string(file.size()) + " bytes, too large");
  const std::string text = read_whole_file(path, kLimit);
  try {
    return parse_json(text);
  } catch (const std::invalid_argument& e) {
    throw fail(std::string("not valid JSON: ") + e.what());
  }
}

}  // namespace remat
