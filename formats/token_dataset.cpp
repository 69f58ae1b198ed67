#include "formats/token_dataset.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "base/whole_file.h"

namespace remat {

std::string read_data_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::invalid_argument(path.string() + ": is a directory; --data needs a file");
  return read_whole_file(path);
}

TokenDataset::TokenDataset(const std::filesystem::path& path, int seq)
    : TokenDataset(from_bytes(read_data_file(path), seq, path.string())) {}

TokenDataset TokenDataset::from_bytes(const std::string& bytes, int seq, std::string origin) {
  std::vector<uint32_t> tokens(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) tokens[i] = static_cast<unsigned char>(bytes[i]);
  return TokenDataset(std::move(tokens), seq, std::move(origin), "bytes");
}

TokenDataset TokenDataset::from_tokens(std::vector<uint32_t> tokens, int seq, std::string origin) {
  return TokenDataset(std::move(tokens), seq, std::move(origin), "tokens");
}

TokenDataset::TokenDataset(std::vector<uint32_t> tokens, int seq, std::string origin,
                           const char* unit)
    : tokens_(std::move(tokens)), seq_(seq), origin_(std::move(origin)) {
  if (seq < 1) throw std::invalid_argument("sequence length must be at least 1");
  if (tokens_.size() < static_cast<std::size_t>(seq) + 2)
    throw std::invalid_argument(origin_ + ": " + std::to_string(tokens_.size()) + " " + unit +
                                " is too short for --seq " + std::to_string(seq) +
                                "; it needs at least " + std::to_string(seq + 2) + " " + unit);
}

Batch TokenDataset::batch(uint64_t step, int batch_size) const {
  Batch b;
  const uint64_t T = static_cast<uint64_t>(seq_);
  const uint64_t span = tokens_.size() - T - 1;
  b.tokens.resize(static_cast<std::size_t>(batch_size) * T);
  b.targets.resize(b.tokens.size());
  for (uint64_t row = 0; row < static_cast<uint64_t>(batch_size); ++row) {
    const uint64_t start = ((step * batch_size + row) * T) % span;
    for (uint64_t t = 0; t < T; ++t) {
      b.tokens[row * T + t] = tokens_[start + t];
      b.targets[row * T + t] = tokens_[start + t + 1];
    }
  }
  return b;
}

double TokenDataset::unigram_entropy() const {
  std::unordered_map<uint32_t, uint64_t> counts;
  for (uint32_t t : tokens_) ++counts[t];
  double h = 0;
  for (const auto& [token, n] : counts) {
    const double p = double(n) / double(tokens_.size());
    h -= p * std::log(p);
  }
  return h;
}

void TokenDataset::check_vocab(std::size_t vocab) const {
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    if (tokens_[i] >= vocab)
      throw std::invalid_argument(origin_ + ": token " + std::to_string(i) + " is id " +
                                  std::to_string(tokens_[i]) + ", but the model's vocabulary has " +
                                  std::to_string(vocab) + " ids (--vocab)");
}

}  // namespace remat
