// Files that are replaced whole or not at all: bytes go to "<path>.tmp-<pid>" and only commit()
// renames them over `path`, so a crash or an error at any point leaves the previous file intact.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>
#include <vector>

namespace remat {

class AtomicFile {
 public:
  // Creates the temporary next to `path` (removing stale temporaries of processes no longer
  // running). Errors throw std::invalid_argument "<path>: cannot write: <reason>", or
  // NotRegularFile (base/regular_file.h) when `path` is a device, FIFO or socket.
  explicit AtomicFile(const std::filesystem::path& path);
  // Without commit(): the temporary is removed and `path` is untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes);
  // fsync the data, rename it over `path`, fsync the folder so the rename itself survives a crash.
  void commit();
  const std::filesystem::path& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(int error);

  std::filesystem::path path_;
  std::filesystem::path temp_;
  int fd_ = -1;
};

// "<name>.tmp-<pid>" entries next to `path` whose process is no longer running: what a process
// that died while writing `path` left behind. Temporaries of live processes are not listed; a
// reused pid only means a stale entry is kept a while longer.
std::vector<std::filesystem::path> stale_temporaries(const std::filesystem::path& path);

// `contents` replaces `path` atomically (an AtomicFile written and committed).
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace remat
