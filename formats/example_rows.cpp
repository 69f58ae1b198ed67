#include "formats/example_rows.h"

#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include "base/ignore_target.h"

namespace remat {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Trained targets of an example: tokens 1.. whose mask is set (token 0 is no position's target).
uint64_t trained_targets(const TokenExample& e) {
  uint64_t n = 0;
  for (std::size_t t = 1; t < e.ids.size(); ++t) n += e.mask[t] != 0;
  return n;
}

}  // namespace

ExampleRows::ExampleRows(std::vector<TokenExample> examples, int seq, uint32_t pad,
                         std::string origin, std::optional<uint64_t> shuffle_seed)
    : seq_(seq), pad_(pad), origin_(std::move(origin)), shuffle_seed_(shuffle_seed) {
  if (seq < 1) throw std::invalid_argument("sequence length must be at least 1");
  report_.examples = examples.size();
  const std::size_t keep = std::size_t(seq) + 1;
  for (TokenExample& e : examples) {
    if (e.mask.size() != e.ids.size())
      throw std::invalid_argument(origin_ + ": line " + std::to_string(e.line) +
                                  ": mask and ids differ in length");
    if (e.ids.size() > keep) {
      e.ids.resize(keep);
      e.mask.resize(keep);
      ++report_.cut;
    }
    const uint64_t trained = trained_targets(e);
    if (trained == 0) {
      if (report_.dropped++ == 0) report_.first_dropped_line = e.line;
      continue;
    }
    report_.trained_targets += trained;
    report_.tokens += e.ids.size();
    examples_.push_back(std::move(e));
  }
  if (examples_.empty())
    throw std::invalid_argument(origin_ + ": none of its " + std::to_string(report_.examples) +
                                " examples has a trained token within --seq " +
                                std::to_string(seq) + " + 1 tokens");
}

std::vector<std::size_t> ExampleRows::permutation(uint64_t epoch) const {
  std::vector<std::size_t> p(examples_.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = i;
  uint64_t state = *shuffle_seed_ + (epoch + 1) * 0x9E3779B97F4A7C15ull;
  for (std::size_t i = p.size() - 1; i > 0; --i)
    std::swap(p[i], p[std::size_t(splitmix64(state) % (i + 1))]);
  return p;
}

std::size_t ExampleRows::example_of_row(uint64_t k) const {
  const uint64_t n = examples_.size();
  if (!shuffle_seed_) return std::size_t(k % n);
  return permutation(k / n)[std::size_t(k % n)];
}

Batch ExampleRows::batch(uint64_t index, int batch_size) const {
  const std::size_t T = std::size_t(seq_);
  Batch b;
  b.tokens.assign(std::size_t(batch_size) * T, pad_);
  b.targets.assign(b.tokens.size(), kIgnoreTarget);
  const uint64_t n = examples_.size();
  std::map<uint64_t, std::vector<std::size_t>> orders;  // the epochs this batch spans
  for (std::size_t row = 0; row < std::size_t(batch_size); ++row) {
    const uint64_t k = index * uint64_t(batch_size) + row;
    std::size_t which = std::size_t(k % n);
    if (shuffle_seed_) {
      auto [it, fresh] = orders.try_emplace(k / n);
      if (fresh) it->second = permutation(k / n);
      which = it->second[which];
    }
    const TokenExample& e = examples_[which];
    uint32_t* tokens = b.tokens.data() + row * T;
    uint32_t* targets = b.targets.data() + row * T;
    for (std::size_t t = 0; t < e.ids.size() && t < T; ++t) tokens[t] = e.ids[t];
    for (std::size_t t = 0; t + 1 < e.ids.size(); ++t)
      if (e.mask[t + 1]) targets[t] = e.ids[t + 1];
  }
  return b;
}

double ExampleRows::unigram_entropy() const {
  std::map<uint32_t, uint64_t> counts;
  for (const TokenExample& e : examples_)
    for (std::size_t t = 1; t < e.ids.size(); ++t)
      if (e.mask[t]) ++counts[e.ids[t]];
  double h = 0;
  for (const auto& [token, c] : counts) {
    const double p = double(c) / double(report_.trained_targets);
    h -= p * std::log(p);
  }
  return h;
}

void ExampleRows::check_vocab(std::size_t vocab) const {
  for (const TokenExample& e : examples_)
    for (std::size_t t = 0; t < e.ids.size(); ++t)
      if (e.ids[t] >= vocab)
        throw std::invalid_argument(origin_ + ": line " + std::to_string(e.line) + ": token " +
                                    std::to_string(t) + " is id " + std::to_string(e.ids[t]) +
                                    ", but the model's vocabulary has " + std::to_string(vocab) +
                                    " ids (--vocab)");
}

}  // namespace remat
