#include "runtime/byte_dataset.h"

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace remat {

namespace {
std::string read_all(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::invalid_argument(path.string() + ": is a directory; --data needs a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::invalid_argument(path.string() + ": cannot open (" + std::strerror(errno) + ")");
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
}  // namespace

ByteDataset::ByteDataset(const std::filesystem::path& path, int seq)
    : ByteDataset(read_all(path), seq, path.string()) {}

ByteDataset ByteDataset::from_bytes(std::string bytes, int seq, std::string origin) {
  return ByteDataset(std::move(bytes), seq, std::move(origin));
}

ByteDataset::ByteDataset(std::string bytes, int seq, std::string origin)
    : bytes_(std::move(bytes)), seq_(seq) {
  if (seq < 1) throw std::invalid_argument("sequence length must be at least 1");
  if (bytes_.size() < static_cast<std::size_t>(seq) + 2)
    throw std::invalid_argument(origin + ": " + std::to_string(bytes_.size()) +
                                " bytes is too short for --seq " + std::to_string(seq) +
                                "; it needs at least " + std::to_string(seq + 2) + " bytes");
}

Batch ByteDataset::batch(uint64_t step, int batch_size) const {
  Batch b;
  const uint64_t T = static_cast<uint64_t>(seq_);
  const uint64_t span = bytes_.size() - T - 1;
  b.tokens.resize(static_cast<std::size_t>(batch_size) * T);
  b.targets.resize(b.tokens.size());
  for (uint64_t row = 0; row < static_cast<uint64_t>(batch_size); ++row) {
    const uint64_t start = ((step * batch_size + row) * T) % span;
    for (uint64_t t = 0; t < T; ++t) {
      b.tokens[row * T + t] = static_cast<unsigned char>(bytes_[start + t]);
      b.targets[row * T + t] = static_cast<unsigned char>(bytes_[start + t + 1]);
    }
  }
  return b;
}

double ByteDataset::unigram_entropy() const {
  std::array<uint64_t, 256> counts{};
  for (char c : bytes_) ++counts[static_cast<unsigned char>(c)];
  double h = 0;
  for (uint64_t n : counts)
    if (n) {
      const double p = double(n) / double(bytes_.size());
      h -= p * std::log(p);
    }
  return h;
}

}  // namespace remat
