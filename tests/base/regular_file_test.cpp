#include "base/regular_file.h"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "base/atomic_file.h"
#include "tests/support/temp_folder.h"
#include "tests/support/watchdog.h"

namespace remat {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// A FIFO nothing ever opens for writing: a reader that open()s it blocks for good.
fs::path make_fifo(const test::TempFolder& dir) {
  const fs::path p = dir / "fifo";
  REQUIRE(::mkfifo(p.c_str(), 0600) == 0);
  return p;
}

// A listening Unix socket's file; closed (the file stays) when the test ends.
struct Socket {
  int fd = -1;
  explicit Socket(const fs::path& p) {
    fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    REQUIRE(p.string().size() < sizeof a.sun_path);
    std::strcpy(a.sun_path, p.c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~Socket() { ::close(fd); }
};

void check_refused(const fs::path& p, const std::string& kind) {
  const std::string line = p.string() + ": is not a regular file (" + kind + ")";
  CHECK_THROWS_AS(require_regular_file(p), NotRegularFile);
  CHECK_THROWS_WITH(require_regular_file(p), line);
  CHECK_THROWS_AS(RegularFile(p), NotRegularFile);
  CHECK_THROWS_WITH(RegularFile(p), line);
}

}  // namespace

TEST_CASE("a regular file, or a symlink to one, opens with its size", "[base][regular_file]") {
  test::TempFolder d("regular_file_open");
  write(d / "a.txt", "twelve bytes");
  fs::create_symlink(d / "a.txt", d / "link.txt");
  for (const fs::path& p : {d / "a.txt", d / "link.txt"}) {
    CHECK_NOTHROW(require_regular_file(p));
    RegularFile f(p);
    CHECK(f.fd() >= 0);
    CHECK(f.size() == 12);
    char c = 0;
    CHECK(::read(f.fd(), &c, 1) == 1);
    CHECK(c == 't');
    const int fd = f.release();
    CHECK(f.fd() == -1);
    CHECK(::close(fd) == 0);  // released: still open, now the caller's
  }
}

TEST_CASE("devices, FIFOs and sockets are refused by stat() alone, naming the path and kind",
          "[base][regular_file]") {
  test::TempFolder d("regular_file_refused");
  // Refused before open(): if the FIFO were opened for reading, this would block, not fail.
  const test::Watchdog watchdog("refusing a FIFO", std::chrono::seconds(60));
  check_refused("/dev/zero", "a character device");
  check_refused("/dev/urandom", "a character device");
  check_refused(make_fifo(d), "a FIFO");
  const Socket socket(d / "socket");
  check_refused(d / "socket", "a socket");
  // A symlink is followed: what it points to decides.
  fs::create_symlink("/dev/zero", d / "zero_link");
  check_refused(d / "zero_link", "a character device");
  fs::create_symlink(d / "fifo", d / "fifo_link");
  check_refused(d / "fifo_link", "a FIFO");
}

TEST_CASE("folders and missing paths are refused in one line naming them", "[base][regular_file]") {
  test::TempFolder d("regular_file_missing");
  CHECK_THROWS_AS(RegularFile(d.path()), NotRegularFile);
  CHECK_THROWS_WITH(RegularFile(d.path()), d.path().string() + ": is a folder, not a file");
  CHECK_THROWS_WITH(RegularFile(d / "missing"),
                    (d / "missing").string() + ": cannot open (No such file or directory)");
  fs::create_symlink(d / "nowhere", d / "dangling");
  CHECK_THROWS_WITH(require_regular_file(d / "dangling"),
                    (d / "dangling").string() + ": cannot open (No such file or directory)");
  write(d / "file", "x");
  CHECK_THROWS_WITH(RegularFile(d / "file" / "child"), Catch::Contains("(Not a directory)"));
}

TEST_CASE("an output path may be new, a file or a folder, never a device, FIFO or socket",
          "[base][regular_file]") {
  test::TempFolder d("regular_file_output");
  CHECK_NOTHROW(require_replaceable_file(d / "new.bin"));
  write(d / "old.bin", "old");
  CHECK_NOTHROW(require_replaceable_file(d / "old.bin"));
  CHECK_NOTHROW(require_replaceable_file(d.path()));
  // stat() only: /dev/null is never opened, let alone replaced.
  CHECK_THROWS_WITH(require_replaceable_file("/dev/null"),
                    "/dev/null: is not a regular file (a character device); outputs replace a "
                    "file whole, give a file path");
  const fs::path fifo = make_fifo(d);
  CHECK_THROWS_AS(require_replaceable_file(fifo), NotRegularFile);
}

TEST_CASE("an AtomicFile refuses a FIFO or device path and leaves it as it was",
          "[base][regular_file]") {
  test::TempFolder d("regular_file_atomic");
  const fs::path fifo = make_fifo(d);
  CHECK_THROWS_WITH(write_file_atomically(fifo, "bytes"),
                    fifo.string() +
                        ": is not a regular file (a FIFO); outputs replace a file "
                        "whole, give a file path");
  CHECK(fs::is_fifo(fifo));  // not renamed over
  CHECK(d.entries() == 1);   // and no temporary beside it
  CHECK_THROWS_AS(AtomicFile("/dev/null"), NotRegularFile);
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("file_kind names each kind of file", "[base][regular_file]") {
  CHECK(file_kind(S_IFCHR) == "a character device");
  CHECK(file_kind(S_IFBLK) == "a block device");
  CHECK(file_kind(S_IFIFO) == "a FIFO");
  CHECK(file_kind(S_IFSOCK) == "a socket");
  CHECK(file_kind(S_IFDIR) == "a folder");
  CHECK(file_kind(S_IFREG) == "a regular file");
}

}  // namespace remat
