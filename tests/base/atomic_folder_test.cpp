// AtomicFolder (base/atomic_folder.h): a folder replaced whole or not at all; an abandoned write
// leaves the previous contents and no temporary; folders holding anything else are refused.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "base/atomic_file.h"
#include "base/atomic_folder.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_state(const fs::path& dir, const std::string& a, const std::string& b) {
  AtomicFolder folder(dir, {"a", "b"});
  write_file_atomically(folder.temp_path() / "a", a);
  write_file_atomically(folder.temp_path() / "b", b);
  folder.commit();
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

}  // namespace

TEST_CASE("a folder is created, then replaced whole") {
  const fs::path root = fs::temp_directory_path() / ("remat_folder_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  write_state(root / "s", "one", "1");
  CHECK(slurp(root / "s" / "a") == "one");
  write_state(root / "s/", "two", "2");  // a trailing separator names the same folder
  CHECK(slurp(root / "s" / "a") == "two");
  CHECK(slurp(root / "s" / "b") == "2");
  CHECK(entries(root) == 1);  // no temporary, no previous contents left beside it

  // Abandoned half-way (an exception before commit): the previous contents stay, the temporary
  // goes.
  {
    AtomicFolder folder(root / "s", {"a", "b"});
    write_file_atomically(folder.temp_path() / "a", "three");
  }
  CHECK(slurp(root / "s" / "a") == "two");
  CHECK(entries(root) == 1);

  // A folder that holds anything else, or a file, is never replaced.
  std::ofstream(root / "s" / "notes.txt") << "mine";
  CHECK_THROWS_WITH(AtomicFolder(root / "s", {"a", "b"}), Catch::Contains("holds 'notes.txt'"));
  std::ofstream(root / "file") << "x";
  CHECK_THROWS_WITH(AtomicFolder(root / "file", {"a"}), Catch::Contains("is not a folder"));
  CHECK_THROWS_WITH(AtomicFolder(root / "no" / "s", {"a"}), Catch::Contains("no such folder"));
  CHECK(slurp(root / "s" / "notes.txt") == "mine");
  fs::remove_all(root);
}
