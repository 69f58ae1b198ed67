#include "base/atomic_folder.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/atomic_file.h"

namespace remat {
namespace {

namespace fs = std::filesystem;

void sync_folder(const fs::path& dir) {
  // A folder that cannot be opened or synced (some network file systems) still holds its entries.
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

fs::path parent_of(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

// The path without a trailing separator ("state/" names the folder "state").
fs::path normalized(const fs::path& path) {
  fs::path p = path.lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

}  // namespace

AtomicFolder::AtomicFolder(const fs::path& path, std::vector<std::string> known)
    : path_(normalized(path)), known_(std::move(known)) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path_, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status))
      throw std::invalid_argument(path_.string() + ": exists and is not a folder");
    for (fs::directory_iterator it(path_, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (std::find(known_.begin(), known_.end(), name) == known_.end())
        throw std::invalid_argument(path_.string() + ": holds '" + name +
                                    "', which is not part of what is saved there; give a new or "
                                    "empty folder");
    }
    if (ec)
      throw std::invalid_argument(path_.string() + ": cannot read the folder: " + ec.message());
  }
  const fs::path parent = parent_of(path_);
  if (!fs::is_directory(parent, ec))
    throw std::invalid_argument(parent.string() + ": no such folder; create it first");
  for (const fs::path& stale : stale_temporaries(path_)) fs::remove_all(stale, ec);
  temp_ = path_.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(temp_, ec);  // this process's own leftover from an earlier failed commit
  if (!fs::create_directory(temp_, ec))
    throw std::invalid_argument(temp_.string() + ": cannot create: " + ec.message());
}

AtomicFolder::~AtomicFolder() {
  std::error_code ignored;
  if (!temp_.empty()) fs::remove_all(temp_, ignored);
}

void AtomicFolder::commit() {
  if (committed_) throw std::logic_error(path_.string() + ": AtomicFolder committed twice");
  sync_folder(temp_);
  std::error_code ec;
  const bool replacing = fs::exists(fs::symlink_status(path_, ec));
  const int r = replacing
                    ? ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, path_.c_str(), RENAME_EXCHANGE)
                    : ::rename(temp_.c_str(), path_.c_str());
  if (r != 0)
    throw std::invalid_argument(path_.string() + ": cannot replace: " + std::strerror(errno));
  committed_ = true;
  sync_folder(parent_of(path_));
  // The previous contents now sit at the temporary path; only known entries were ever there.
  if (!replacing) temp_.clear();
}

}  // namespace remat
