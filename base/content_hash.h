// Content hashes that say whether a file is still the one a run read: "FNV-1a 64 over words"
// (fnv1a64w), written as 16 hex digits. It is FNV-1a with the reference's 64-bit offset basis and
// prime, applied to each 8-byte little-endian word of the input (h = (h ^ word) * prime), then to
// the last 0-7 bytes one at a time. Byte-wise FNV-1a ran at 0.23 GB/s on the loaded 2-core build
// machine, 6.5 s for GPT-2 124M's 1.5 GB state; one multiplication per word is 8 times fewer. It
// detects accidental change (an edited or truncated data file, a damaged state), not a deliberate
// forgery: remat links no cryptography library, and none is needed to notice that a file changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace remat {

// The hash of everything passed to update(), in order, however it was split into pieces.
class Fnv1a64 {
 public:
  void update(std::span<const std::byte> bytes);
  void update(std::string_view bytes) {
    update(std::as_bytes(std::span(bytes.data(), bytes.size())));
  }
  uint64_t digest() const;

 private:
  uint64_t state_ = 0xcbf29ce484222325ull;
  std::byte pending_[8] = {};  // the start of a word split between update() calls
  std::size_t pending_count_ = 0;
};

// 16 lowercase hex digits, and back (std::invalid_argument naming `what` for anything else).
std::string hash_hex(uint64_t hash);
uint64_t parse_hash_hex(std::string_view text, std::string_view what);

// A file a run read, identified by its size and contents; the path is where it was found.
struct FileIdentity {
  std::filesystem::path path;
  uint64_t bytes = 0;
  uint64_t fnv1a64w = 0;
  // Same contents, wherever they are.
  bool same_contents(const FileIdentity& o) const {
    return bytes == o.bytes && fnv1a64w == o.fnv1a64w;
  }
};

// Reads `path` whole, in bounded pieces. std::invalid_argument "<path>: cannot read: <reason>".
// A folder (a tokenizer given as one) hashes its regular files in name order, each as its name,
// its size and its bytes.
FileIdentity identify_file(const std::filesystem::path& path);

}  // namespace remat
