#include "base/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "base/regular_file.h"

namespace remat {
namespace {

namespace fs = std::filesystem;

fs::path folder_of(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

void remove_stale_temporaries(const fs::path& path) {
  std::error_code ignored;
  for (const fs::path& stale : stale_temporaries(path)) fs::remove(stale, ignored);
}

}  // namespace

std::vector<fs::path> stale_temporaries(const fs::path& path) {
  const std::string prefix = path.filename().string() + ".tmp-";
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder_of(path), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || pid <= 0) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) out.push_back(it->path());
  }
  return out;
}

AtomicFile::AtomicFile(const fs::path& path)
    : path_(path), temp_(path.string() + ".tmp-" + std::to_string(::getpid())) {
  require_replaceable_file(path_);  // the rename would replace a device or FIFO, not fill it
  remove_stale_temporaries(path_);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFile::fail(int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  throw std::invalid_argument(path_.string() + ": cannot write: " + std::strerror(error));
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  if (fd_ < 0) throw std::logic_error(path_.string() + ": AtomicFile written after commit");
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd_, p, bytes);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    p += w;
    bytes -= static_cast<std::size_t>(w);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw std::logic_error(path_.string() + ": AtomicFile committed twice");
  if (::fsync(fd_) != 0) fail(errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(errno);
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) fail(errno);
  // The rename is only durable once the folder's entry is on disk; a folder that cannot be
  // opened or synced (some network file systems) still holds the complete new file.
  const int dfd = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const fs::path& path, std::string_view contents) {
  AtomicFile file(path);
  file.write(contents.data(), contents.size());
  file.commit();
}

}  // namespace remat
