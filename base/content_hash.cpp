#include "base/content_hash.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/regular_file.h"

namespace remat {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kPrime = 0x100000001b3ull;

uint64_t little_endian_word(const std::byte* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w;
}

[[noreturn]] void cannot_read(const fs::path& path, int error) {
  throw std::invalid_argument(path.string() + ": cannot read: " + std::strerror(error));
}

// Hashes the bytes of one regular file; returns how many there were.
uint64_t hash_contents(const fs::path& path, Fnv1a64& hash) {
  const int fd = RegularFile(path).release();
  std::vector<std::byte> buffer(1 << 20);
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      cannot_read(path, error);
    }
    if (n == 0) break;
    hash.update(std::span(buffer).first(static_cast<std::size_t>(n)));
    total += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return total;
}

}  // namespace

void Fnv1a64::update(std::span<const std::byte> bytes) {
  std::size_t i = 0;
  while (pending_count_ > 0 && pending_count_ < 8 && i < bytes.size())
    pending_[pending_count_++] = bytes[i++];
  if (pending_count_ == 8) {
    state_ = (state_ ^ little_endian_word(pending_)) * kPrime;
    pending_count_ = 0;
  }
  uint64_t h = state_;
  for (; i + 8 <= bytes.size(); i += 8) h = (h ^ little_endian_word(&bytes[i])) * kPrime;
  state_ = h;
  while (i < bytes.size()) pending_[pending_count_++] = bytes[i++];
}

uint64_t Fnv1a64::digest() const {
  uint64_t h = state_;
  for (std::size_t i = 0; i < pending_count_; ++i)
    h = (h ^ static_cast<uint64_t>(pending_[i])) * kPrime;
  return h;
}

std::string hash_hex(uint64_t hash) {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) out[static_cast<std::size_t>(i)] = digits[hash & 15];
  return out;
}

uint64_t parse_hash_hex(std::string_view text, std::string_view what) {
  uint64_t v = 0;
  if (text.size() != 16) throw std::invalid_argument(std::string(what) + " is not 16 hex digits");
  for (char c : text) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) throw std::invalid_argument(std::string(what) + " is not 16 hex digits");
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

FileIdentity identify_file(const fs::path& path) {
  FileIdentity id;
  id.path = path;
  Fnv1a64 hash;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    id.bytes = hash_contents(path, hash);
    id.fnv1a64w = hash.digest();
    return id;
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) files.push_back(it->path());
  if (ec) cannot_read(path, ec.value());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    Fnv1a64 contents;
    const uint64_t n = hash_contents(f, contents);
    hash.update(f.filename().string());
    hash.update(hash_hex(n) + hash_hex(contents.digest()));
    id.bytes += n;
  }
  id.fnv1a64w = hash.digest();
  return id;
}

}  // namespace remat
