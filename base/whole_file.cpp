#include "base/whole_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/regular_file.h"

namespace remat {

namespace {

// Up to `limit` bytes from `fd`'s current position to its end.
std::string read_to_end(int fd, uint64_t limit, const std::string& origin) {
  std::string bytes;
  std::size_t filled = 0;
  for (;;) {
    if (filled == bytes.size()) {
      if (filled >= limit) break;
      bytes.resize(static_cast<std::size_t>(
          std::min<uint64_t>(limit, std::max<uint64_t>(2 * filled, 1 << 16))));
    }
    const ssize_t r = ::read(fd, bytes.data() + filled, bytes.size() - filled);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw std::invalid_argument(origin + ": read error (" + std::strerror(errno) + ")");
    if (r == 0) break;
    filled += static_cast<std::size_t>(r);
  }
  bytes.resize(filled);
  return bytes;
}

}  // namespace

std::string read_whole_file(const std::filesystem::path& path, uint64_t unsized_limit) {
  const RegularFile file(path);
  const std::string origin = path.string();
  // A file that grows while it is read is taken at the size it had when opened.
  if (file.size() > 0) return read_to_end(file.fd(), file.size(), origin);
  std::string bytes = read_to_end(file.fd(), unsized_limit, origin);
  char more = 0;
  if (bytes.size() == unsized_limit && ::read(file.fd(), &more, 1) > 0)
    throw std::invalid_argument(origin + ": its size reads as 0 but it holds more than " +
                                std::to_string(unsized_limit) +
                                " bytes (a /proc file?); copy what remat should read to a file");
  return bytes;
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
