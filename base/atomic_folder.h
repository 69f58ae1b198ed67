// Folders replaced whole or not at all, for outputs made of several files that must match each
// other (a training state: weights, optimizer moments and the JSON that describes both). The new
// contents are written into a fresh sibling "<path>.tmp-<pid>"; commit() syncs it and swaps it
// with `path` in one rename (renameat2 RENAME_EXCHANGE, or a plain rename when `path` does not
// exist yet), then removes the previous contents. A crash, power loss or error at any point leaves
// `path` holding either the previous complete contents or the new complete contents, never a mix.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace remat {

class AtomicFolder {
 public:
  // `path` must not exist, or be a folder holding only entries named in `known` (what an earlier
  // commit of the same kind wrote): anything else is refused with std::invalid_argument
  // "<path>: ..." naming the stranger, so that no folder of the user's is ever replaced. Creates
  // the temporary folder, removing those that processes no longer running left behind.
  AtomicFolder(const std::filesystem::path& path, std::vector<std::string> known);
  // Without commit(): the temporary folder and everything in it are removed; `path` is untouched.
  ~AtomicFolder();
  AtomicFolder(const AtomicFolder&) = delete;
  AtomicFolder& operator=(const AtomicFolder&) = delete;

  // Where to write the new contents (each file should itself be written atomically and synced).
  const std::filesystem::path& temp_path() const { return temp_; }
  // Syncs the temporary folder, swaps it into `path`, syncs the parent folder, and removes the
  // previous contents. std::invalid_argument "<path>: cannot replace: <reason>" on failure, with
  // `path` as it was.
  void commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path temp_;
  std::vector<std::string> known_;
  bool committed_ = false;
};

}  // namespace remat
