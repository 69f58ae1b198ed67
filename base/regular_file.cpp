#include "base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace remat {
namespace {

[[noreturn]] void cannot_open(const std::filesystem::path& path, int error) {
  throw std::invalid_argument(path.string() + ": cannot open (" + std::strerror(error) + ")");
}

void require_regular(const std::filesystem::path& path, mode_t mode) {
  if (S_ISREG(mode)) return;
  if (S_ISDIR(mode)) throw NotRegularFile(path.string() + ": is a folder, not a file");
  throw NotRegularFile(path.string() + ": is not a regular file (" + file_kind(mode) + ")");
}

}  // namespace

std::string file_kind(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISREG(mode)) return "a regular file";
  return "of an unknown kind";
}

void require_regular_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) cannot_open(path, errno);
  require_regular(path, st.st_mode);
}

RegularFile::RegularFile(const std::filesystem::path& path) {
  require_regular_file(path);
  // O_NONBLOCK: should a FIFO replace the file after the stat() above, open() returns at once
  // instead of waiting for a writer (POSIX open(), "O_NONBLOCK ... FIFO"); fstat then refuses it.
  // On a regular file the flag changes nothing (Linux open(2)), but it is cleared anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) cannot_open(path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    cannot_open(path, error);
  }
  try {
    require_regular(path, st.st_mode);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  fd_ = fd;
  size_ = static_cast<uint64_t>(st.st_size);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

int RegularFile::release() {
  return std::exchange(fd_, -1);
}

void require_replaceable_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // nothing there yet (or a dangling symlink)
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return;
  throw NotRegularFile(path.string() + ": is not a regular file (" + file_kind(st.st_mode) +
                       "); outputs replace a file whole, give a file path");
}

}  // namespace remat
