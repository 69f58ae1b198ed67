// Pipeline cache files: written after pipelines are compiled, reused by the next cache on the
// same device, and ignored with one warning when absent, corrupt, truncated or foreign.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "runtime/vulkan/kernel_cache.h"
#include "runtime/vulkan/pipeline_cache.h"
#include "tests/support/temp_folder.h"
#include "tests/support/test_device.h"
#include "tests/support/watchdog.h"

using namespace remat;
namespace fs = std::filesystem;

namespace {

void spill(const fs::path& p, const std::vector<std::byte>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// What `f` writes to stderr.
template <class F>
std::string stderr_of(F&& f) {
  std::fflush(stderr);
  const std::string path =
      fs::temp_directory_path() / ("remat_pc_err_" + std::to_string(::getpid()));
  const int saved = ::dup(2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 2);
  ::close(fd);
  try {
    f();
  } catch (...) {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    throw;
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(path);
  return text;
}

// Builds a few pipelines through a KernelCache backed by `file`; returns what it loaded.
uint64_t compile_some(const fs::path& file, std::size_t* hits = nullptr) {
  KernelCache k(test::device(), file);
  k.get(KernelId::fill, {64, 1, 1});
  k.get(KernelId::copy, {64, 1, 1});
  k.save_pipeline_cache();
  if (hits) *hits = k.pipeline_cache_hits();
  return k.pipeline_cache().loaded_bytes();
}

std::vector<std::byte> some_vulkan_data(const PipelineCacheKey& key) {
  std::vector<std::byte> d(48);
  const uint32_t head[4] = {32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, key.vendor_id, key.device_id};
  std::memcpy(d.data(), head, 16);
  std::memcpy(d.data() + 16, key.cache_uuid.data(), VK_UUID_SIZE);
  return d;
}

}  // namespace

TEST_CASE("a cache file is accepted only for its own key and an intact Vulkan header") {
  const PipelineCacheKey key = pipeline_cache_key(test::device());
  const auto data = some_vulkan_data(key);
  const auto file = encode_pipeline_cache(key, data);
  std::string why;
  const auto back = decode_pipeline_cache(file, key, why);
  REQUIRE(back);
  CHECK(std::vector<std::byte>(back->begin(), back->end()) == data);

  auto refused = [&](const std::vector<std::byte>& bytes, const PipelineCacheKey& k) {
    std::string reason;
    const bool ok = decode_pipeline_cache(bytes, k, reason).has_value();
    return ok ? std::string() : reason;
  };
  PipelineCacheKey other = key;
  other.device_uuid[0] ^= 1;
  CHECK_THAT(refused(file, other), Catch::Contains("another device"));
  other = key;
  other.driver_version += 1;
  CHECK_THAT(refused(file, other), Catch::Contains("another device or driver version"));
  other = key;
  other.remat_version = "9.9.9";
  CHECK_THAT(refused(file, other), Catch::Contains("written by remat " + key.remat_version));
  // Right remat header, wrong Vulkan header: another pipelineCacheUUID, or a broken version.
  auto foreign = data;
  foreign[16] ^= std::byte{1};
  CHECK_THAT(refused(encode_pipeline_cache(key, foreign), key), Catch::Contains("another device"));
  auto broken = data;
  broken[4] = std::byte{7};
  CHECK_THAT(refused(encode_pipeline_cache(key, broken), key), Catch::Contains("malformed"));
  CHECK_THAT(refused(encode_pipeline_cache(key, std::vector<std::byte>(10)), key),
             Catch::Contains("truncated"));
  // Every truncation of a valid file is refused, never read past its end.
  for (std::size_t n = 0; n < file.size(); ++n)
    CHECK_FALSE(refused(std::vector<std::byte>(file.begin(), file.begin() + n), key).empty());
  auto longer = file;
  longer.push_back(std::byte{0});
  CHECK_FALSE(refused(longer, key).empty());
  std::mt19937 rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<std::byte> junk(rng() % 200);
    for (auto& b : junk) b = static_cast<std::byte>(rng());
    CHECK_FALSE(refused(junk, key).empty());
  }
}

TEST_CASE("a second kernel cache reuses the file the first one wrote") {
  test::TempFolder d("pc_reuse");
  const fs::path file = pipeline_cache_file(d.path(), pipeline_cache_key(test::device()));
  std::string err = stderr_of([&] { CHECK(compile_some(file) == 0); });  // absent: no warning
  CHECK(err.empty());
  REQUIRE(fs::exists(file));
  const auto written = test::read_bytes(file);
  std::string why;
  const auto data = decode_pipeline_cache(written, pipeline_cache_key(test::device()), why);
  REQUIRE(data);
  CHECK(data->size() >= 32);

  std::size_t hits = 0;
  err = stderr_of([&] { CHECK(compile_some(file, &hits) == data->size()); });
  CHECK(err.empty());
  // Nothing new was compiled into the cache, so the file was not rewritten.
  CHECK(test::read_bytes(file) == written);
  // Drivers that keep pipelines in the cache say so through creation feedback; lavapipe (Mesa
  // 22.3) stores nothing beyond the header, so hits can only be counted where data was kept.
  if (data->size() > 32) CHECK(hits == 2);
}

TEST_CASE("corrupt, truncated and foreign cache files are ignored with one warning") {
  test::TempFolder d("pc_bad");
  const PipelineCacheKey key = pipeline_cache_key(test::device());
  const fs::path file = pipeline_cache_file(d.path(), key);
  compile_some(file);
  const auto good = test::read_bytes(file);
  PipelineCacheKey other = key;
  other.remat_version = "0.0.0-other";
  std::vector<std::byte> junk(300);
  std::mt19937 rng(11);
  for (auto& b : junk) b = static_cast<std::byte>(rng());
  const std::vector<std::vector<std::byte>> bad = {
      junk,
      std::vector<std::byte>(good.begin(), good.begin() + good.size() / 2),
      encode_pipeline_cache(other, some_vulkan_data(key)),
      {}};
  for (const auto& bytes : bad) {
    spill(file, bytes);
    uint64_t loaded = 1;
    const std::string err = stderr_of([&] { loaded = compile_some(file); });
    CHECK(loaded == 0);
    CHECK_THAT(err, Catch::StartsWith("remat: warning: " + file.string() + ": "));
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK(test::read_bytes(file) == good);  // replaced by a valid file
  }
}

TEST_CASE("a cache file that is a FIFO is never opened: warned of, and it stays a FIFO") {
  test::TempFolder d("pc_fifo");
  const fs::path file = pipeline_cache_file(d.path(), pipeline_cache_key(test::device()));
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);  // nothing opens it for writing: a read would block
  const test::Watchdog watchdog("a kernel cache over a FIFO", std::chrono::seconds(120));
  uint64_t loaded = 1;
  const std::string err = stderr_of([&] { loaded = compile_some(file); });
  CHECK(loaded == 0);
  CHECK_THAT(err, Catch::StartsWith("remat: warning: " + file.string() +
                                    ": is not a regular file (a FIFO); ignoring it"));
  CHECK(fs::is_fifo(file));  // the save was refused too, not renamed over it
  CHECK(d.entries() == 1);
}

TEST_CASE("the default cache folder follows REMAT_CACHE_DIR, XDG_CACHE_HOME, then HOME") {
  auto saved = [](const char* n) -> std::optional<std::string> {
    const char* v = std::getenv(n);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto remat = saved("REMAT_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  ::setenv("REMAT_CACHE_DIR", "/r", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  CHECK(default_pipeline_cache_dir() == fs::path("/r"));
  ::setenv("REMAT_CACHE_DIR", "", 1);
  CHECK(default_pipeline_cache_dir() == fs::path("/x/remat"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(default_pipeline_cache_dir() == fs::path("/h/.cache/remat"));
  ::unsetenv("HOME");
  CHECK_FALSE(default_pipeline_cache_dir());
  auto restore = [](const char* n, const std::optional<std::string>& v) {
    if (v)
      ::setenv(n, v->c_str(), 1);
    else
      ::unsetenv(n);
  };
  restore("REMAT_CACHE_DIR", remat);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}
