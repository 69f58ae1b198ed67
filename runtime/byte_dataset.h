// Training data as bytes (vocabulary 256), with the exact windowing contract other tools rely on:
// step s, row b is the window of T+1 bytes starting at ((s·B + b)·T) mod (len − T − 1); inputs are
// its first T bytes, targets its last T.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace remat {

struct Batch {
  std::vector<uint32_t> tokens;   // [B, T]
  std::vector<uint32_t> targets;  // [B, T]
};

class ByteDataset {
 public:
  // Throws std::invalid_argument for a missing, unreadable, empty or too short file (it must
  // hold at least T + 2 bytes so that len − T − 1 ≥ 1), or a directory.
  ByteDataset(const std::filesystem::path& path, int seq);
  // Data already in memory. A named factory, so a file name passed as a string can never be
  // mistaken for the data.
  static ByteDataset from_bytes(std::string bytes, int seq, std::string origin = "data");

  Batch batch(uint64_t step, int batch_size) const;
  std::size_t size() const { return bytes_.size(); }
  // Shannon entropy of the byte distribution, in nats: the loss a unigram model reaches.
  double unigram_entropy() const;

 private:
  ByteDataset(std::string bytes, int seq, std::string origin);
  std::string bytes_;
  int seq_;
};

}  // namespace remat
