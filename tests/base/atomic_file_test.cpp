#include "base/atomic_file.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace remat {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("remat_atomic_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

TEST_CASE("AtomicFile commit replaces the file and leaves no temporary") {
  const fs::path dir = scratch_dir("commit");
  const fs::path target = dir / "out.json";
  write_file_atomically(target, "old");
  {
    AtomicFile f(target);
    CHECK(f.temp_path() == fs::path(target.string() + ".tmp-" + std::to_string(::getpid())));
    f.write("ne", 2);
    f.write("w!", 2);
    CHECK(slurp(target) == "old");
    f.commit();
  }
  CHECK(slurp(target) == "new!");
  CHECK(entries(dir) == 1);
  fs::remove_all(dir);
}

TEST_CASE("AtomicFile destroyed without commit keeps the old file and removes its temporary") {
  const fs::path dir = scratch_dir("abandon");
  const fs::path target = dir / "weights.bin";
  write_file_atomically(target, "previous");
  {
    AtomicFile f(target);
    f.write("partial", 7);
    CHECK(fs::exists(f.temp_path()));
  }
  CHECK(slurp(target) == "previous");
  CHECK(entries(dir) == 1);
  fs::remove_all(dir);
}

TEST_CASE("AtomicFile removes temporaries of dead processes and keeps live ones") {
  const fs::path dir = scratch_dir("stale");
  const fs::path target = dir / "f";
  // pid 2^22 + 1 is above Linux's largest pid_max, so no process can hold it.
  const fs::path dead = dir / "f.tmp-4194305";
  const fs::path live = dir / ("f.tmp-" + std::to_string(::getppid()));
  std::ofstream(dead) << "x";
  std::ofstream(live) << "y";
  write_file_atomically(target, "z");
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
  fs::remove_all(dir);
}

TEST_CASE("AtomicFile reports an unwritable path with the path and the reason") {
  const fs::path target = fs::temp_directory_path() / "remat_no_such_dir" / "x" / "f";
  try {
    write_file_atomically(target, "z");
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == target.string() + ": cannot write: No such file or directory");
  }
}

}  // namespace
}  // namespace remat
