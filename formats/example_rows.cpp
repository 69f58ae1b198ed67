#include "formats/example_rows.h"

#include <algorithm>
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

void fill_example_row(const TokenExample& e, int seq, uint32_t* tokens, uint32_t* targets) {
  const std::size_t T = std::size_t(seq);
  for (std::size_t t = 0; t < e.ids.size() && t < T; ++t) tokens[t] = e.ids[t];
  for (std::size_t t = 0; t + 1 < e.ids.size() && t < T; ++t)
    if (e.mask[t + 1]) targets[t] = e.ids[t + 1];
}

uint64_t trained_targets_within(const TokenExample& e, int seq) {
  uint64_t n = 0;
  for (std::size_t t = 1; t < e.ids.size() && t <= std::size_t(seq); ++t) n += e.mask[t] != 0;
  return n;
}

ExampleRows::ExampleRows(std::vector<TokenExample> examples, int seq, uint32_t pad,
                         std::string origin, std::optional<uint64_t> shuffle_seed, bool pack)
    : seq_(seq), pad_(pad), origin_(std::move(origin)), shuffle_seed_(shuffle_seed), pack_(pack) {
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
  packing_.seq = seq;
  packing_.plain_rows = examples_.size();
  for (const TokenExample& e : examples_) packing_.filled += e.ids.size() - 1;
  packing_.packed_rows = pass_rows(0).size();  // reported unpacked too: what --pack would give
}

std::vector<std::size_t> ExampleRows::pass_order(uint64_t pass) const {
  if (shuffle_seed_) return permutation(pass);
  std::vector<std::size_t> order(examples_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

const std::vector<PackedRow>& ExampleRows::pass_rows(uint64_t pass) const {
  if (!shuffle_seed_) pass = 0;  // every pass in file order packs alike
  if (auto it = pass_rows_.find(pass); it != pass_rows_.end()) return it->second;
  if (pass_rows_.size() >= 4) pass_rows_.erase(pass_rows_.begin());  // a batch spans few passes
  const std::vector<std::size_t> order = pass_order(pass);
  std::vector<int> lengths(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    lengths[i] = int(examples_[order[i]].ids.size()) - 1;
  std::vector<PackedRow> rows = pack_first_fit(lengths, seq_);
  for (PackedRow& r : rows)  // pass positions to example indices
    for (std::size_t& e : r.examples) e = order[e];
  return pass_rows_.emplace(pass, std::move(rows)).first->second;
}

std::pair<uint64_t, std::size_t> ExampleRows::locate(uint64_t k) const {
  if (!shuffle_seed_) {
    const uint64_t n = packing_.packed_rows;
    return {k / n, std::size_t(k % n)};
  }
  if (pass_starts_.empty()) pass_starts_.push_back(0);
  while (pass_starts_.back() <= k)
    pass_starts_.push_back(pass_starts_.back() + pass_rows(pass_starts_.size() - 1).size());
  const auto next = std::upper_bound(pass_starts_.begin(), pass_starts_.end(), k);
  const uint64_t pass = uint64_t(next - pass_starts_.begin()) - 1;
  return {pass, std::size_t(k - pass_starts_[pass])};
}

uint64_t ExampleRows::pass_of_row(uint64_t k) const {
  return pack_ ? locate(k).first : k / examples_.size();
}

std::vector<std::size_t> ExampleRows::examples_of_row(uint64_t k) const {
  if (!pack_) return {example_of_row(k)};
  const auto [pass, row] = locate(k);
  return pass_rows(pass)[row].examples;
}

void ExampleRows::fill_packed_row(uint64_t k, uint32_t* tokens, uint32_t* targets,
                                  uint32_t* positions) const {
  std::size_t t = 0;
  for (std::size_t which : examples_of_row(k)) {
    const TokenExample& e = examples_[which];
    for (std::size_t i = 0; i + 1 < e.ids.size(); ++i, ++t) {
      tokens[t] = e.ids[i];
      if (e.mask[i + 1]) targets[t] = e.ids[i + 1];
      positions[t] = uint32_t(i);
    }
  }
  for (uint32_t p = 0; t < std::size_t(seq_); ++t, ++p) positions[t] = p;  // padding
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
  if (pack_) throw std::logic_error("example_of_row: packed rows hold several examples");
  const uint64_t n = examples_.size();
  if (!shuffle_seed_) return std::size_t(k % n);
  return permutation(k / n)[std::size_t(k % n)];
}

Batch ExampleRows::batch(uint64_t index, int batch_size) const {
  const std::size_t T = std::size_t(seq_);
  Batch b;
  b.tokens.assign(std::size_t(batch_size) * T, pad_);
  b.targets.assign(b.tokens.size(), kIgnoreTarget);
  if (pack_) {
    b.positions.assign(b.tokens.size(), 0);
    for (std::size_t row = 0; row < std::size_t(batch_size); ++row)
      fill_packed_row(index * uint64_t(batch_size) + row, b.tokens.data() + row * T,
                      b.targets.data() + row * T, b.positions.data() + row * T);
    return b;
  }
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
    fill_example_row(examples_[which], seq_, b.tokens.data() + row * T, b.targets.data() + row * T);
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
