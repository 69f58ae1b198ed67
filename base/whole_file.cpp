#include "base/whole_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
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

void read_file_at(int fd, uint64_t offset, void* out, std::size_t bytes,
                  const std::string& origin) {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t r = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw std::invalid_argument(origin + ": read error (" + std::strerror(errno) + ")");
    if (r == 0)
      throw std::invalid_argument(origin +
                                  ": the file ended early; was it changed while remat read it?");
    p += r;
    offset += static_cast<uint64_t>(r);
    bytes -= static_cast<std::size_t>(r);
  }
}

}  // namespace remat
