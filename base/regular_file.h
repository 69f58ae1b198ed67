// The one gate every reader of a user-named path goes through: only regular files (symlinks to
// them included) are opened. A device never ends (/dev/zero reads until memory runs out), and
// open() on a FIFO blocks until some other process opens it for writing, so both are refused
// from stat() alone, before anything opens them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace remat {

// A path that exists but is no regular file: "<path>: is not a regular file (a character
// device)", "... (a FIFO)", "... (a socket)", "... (a block device)", or "<path>: is a folder, not
// a file". Callers that treat bad input and unreadable files differently (the C API's
// INVALID_ARGUMENT and IO) tell it from other std::invalid_argument by type.
class NotRegularFile : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Refuses `path` unless stat() says it is a regular file; opens nothing. NotRegularFile as above,
// std::invalid_argument "<path>: cannot open (<reason>)" when it cannot be stat()ed (missing,
// a dangling symlink, no permission to search a folder on the way).
void require_regular_file(const std::filesystem::path& path);

// A regular file open for reading. Checked as require_regular_file checks before open(), and
// again on the descriptor: the open is O_NONBLOCK, so a FIFO swapped in between the two cannot
// block it, and it is refused all the same. std::invalid_argument "<path>: cannot open
// (<reason>)" when open() fails.
class RegularFile {
 public:
  explicit RegularFile(const std::filesystem::path& path);
  ~RegularFile();
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int fd() const { return fd_; }
  // st_size when opened. 0 for /proc files and some other generated files, which still hold
  // bytes: read_whole_file reads those to their end under a bound.
  uint64_t size() const { return size_; }
  // Hands the descriptor over (the caller closes it); this object no longer owns it.
  int release();

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// For outputs, which are written to a temporary and renamed over `path`: refuses an existing
// `path` that is no regular file with NotRegularFile "<path>: is not a regular file (a FIFO);
// outputs replace a file whole, give a file path". A rename would put a file in place of the
// device or FIFO (as root even of /dev/null) instead of writing into it. A missing path, a
// regular file and a symlink to one pass; folders are the caller's to judge.
void require_replaceable_file(const std::filesystem::path& path);

// "a character device", "a FIFO", ...: what a stat() mode that is no regular file or folder is.
std::string file_kind(mode_t mode);

}  // namespace remat
