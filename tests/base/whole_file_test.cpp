#include "base/whole_file.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "base/regular_file.h"
#include "tests/support/temp_folder.h"
#include "tests/support/watchdog.h"

namespace remat {

namespace fs = std::filesystem;

TEST_CASE("read_whole_file returns a file's bytes exactly", "[base][whole_file]") {
  test::TempFolder d("whole_file_bytes");
  std::string bytes;
  for (uint32_t i = 0; bytes.size() < 300000; ++i) bytes += static_cast<char>(i * 7919u % 256u);
  std::ofstream(d / "big.bin", std::ios::binary) << bytes;
  CHECK(read_whole_file(d / "big.bin") == bytes);
  std::ofstream(d / "empty.bin", std::ios::binary).flush();
  CHECK(read_whole_file(d / "empty.bin").empty());
}

TEST_CASE("read_whole_file refuses devices and FIFOs without reading or blocking",
          "[base][whole_file]") {
  test::TempFolder d("whole_file_refused");
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);  // never opened for writing
  // Broken, these would block for good on the FIFO or read /dev/zero until memory runs out.
  const test::Watchdog watchdog("read_whole_file of a device or FIFO", std::chrono::seconds(60),
                                test::Watchdog::resident_bytes() + (1ll << 30));
  CHECK_THROWS_AS(read_whole_file("/dev/zero"), NotRegularFile);
  CHECK_THROWS_WITH(read_whole_file("/dev/zero"),
                    "/dev/zero: is not a regular file (a character device)");
  CHECK_THROWS_WITH(read_whole_file(d / "fifo"),
                    (d / "fifo").string() + ": is not a regular file (a FIFO)");
  CHECK_THROWS_WITH(read_whole_file(d.path()), d.path().string() + ": is a folder, not a file");
}

TEST_CASE("a file whose size reads as 0 is read to its end, under a bound", "[base][whole_file]") {
  // /proc files report st_size 0 and still hold text.
  struct stat st {};
  REQUIRE(::stat("/proc/self/status", &st) == 0);
  REQUIRE(S_ISREG(st.st_mode));
  REQUIRE(st.st_size == 0);
  const std::string status = read_whole_file("/proc/self/status");
  CHECK(status.rfind("Name:", 0) == 0);
  CHECK(status.back() == '\n');  // to the end, not a first read's worth
  CHECK(read_whole_file("/proc/self/status", status.size() + 4096).rfind("Name:", 0) == 0);
  // More than the bound: refused, naming the path and the bound.
  CHECK_THROWS_WITH(read_whole_file("/proc/self/status", 64),
                    "/proc/self/status: its size reads as 0 but it holds more than 64 bytes (a "
                    "/proc file?); copy what remat should read to a file");
  // A sized file is read whole whatever the bound: it applies only to unsized ones.
  test::TempFolder d("whole_file_sized");
  std::ofstream(d / "a.txt", std::ios::binary) << std::string(1000, 'a');
  CHECK(read_whole_file(d / "a.txt", 64).size() == 1000);
}

TEST_CASE("read_file_at reads exact ranges and names a file that ended early",
          "[base][whole_file]") {
  test::TempFolder d("whole_file_at");
  std::ofstream(d / "f.bin", std::ios::binary) << "0123456789";
  const RegularFile f(d / "f.bin");
  char out[4] = {};
  read_file_at(f.fd(), 3, out, 4, "f.bin");
  CHECK(std::string(out, 4) == "3456");
  CHECK_THROWS_WITH(read_file_at(f.fd(), 8, out, 4, "f.bin"),
                    Catch::StartsWith("f.bin: the file ended early"));
}

}  // namespace remat
