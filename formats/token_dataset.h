// Training data as tokens, with the exact windowing contract other tools rely on: step s, row b
// is the window of T+1 tokens starting at ((s·B + b)·T) mod (n − T − 1); inputs are its first T
// tokens, targets its last T. Bytes are tokens of a 256-id vocabulary; token ids come from a
// tokenizer or a token file (the command line reads those; the runtime only holds ids).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace remat {

struct Batch {
  std::vector<uint32_t> tokens;   // [B, T]
  std::vector<uint32_t> targets;  // [B, T]
  // [B, T] each token's position in its example when rows are packed (base/row_positions.h);
  // empty for rows of one example or window each.
  std::vector<uint32_t> positions;
};

// The whole of a --data file. Throws std::invalid_argument naming it: missing, unreadable, a
// directory, or no regular file (a device, FIFO or socket: base/regular_file.h).
std::string read_data_file(const std::filesystem::path& path);

class TokenDataset {
 public:
  // A file read as bytes. Throws std::invalid_argument for a missing, unreadable, empty or too
  // short file (it must hold at least T + 2 bytes so that n − T − 1 ≥ 1), or a directory.
  TokenDataset(const std::filesystem::path& path, int seq);
  // Data already in memory. Named factories, so a file name passed as a string can never be
  // mistaken for the data.
  static TokenDataset from_bytes(const std::string& bytes, int seq, std::string origin = "data");
  static TokenDataset from_tokens(std::vector<uint32_t> tokens, int seq, std::string origin);

  Batch batch(uint64_t step, int batch_size) const;
  std::size_t size() const { return tokens_.size(); }
  const std::vector<uint32_t>& tokens() const { return tokens_; }
  const std::string& origin() const { return origin_; }
  // Shannon entropy of the token distribution, in nats: the loss a unigram model reaches.
  double unigram_entropy() const;
  // Throws std::invalid_argument naming the origin, position and id of the first token that is
  // not below `vocab`, so that a mismatched model is refused before any step runs.
  void check_vocab(std::size_t vocab) const;

 private:
  TokenDataset(std::vector<uint32_t> tokens, int seq, std::string origin, const char* unit);
  std::vector<uint32_t> tokens_;
  int seq_;
  std::string origin_;
};

}  // namespace remat
