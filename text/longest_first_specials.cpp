#include "text/longest_first_specials.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

#include "text/tokenizer.h"

namespace remat::text {

LongestFirstSpecials::LongestFirstSpecials(const std::vector<SpecialToken>& specials)
    : plain_(specials.size()), rank_(specials.size()) {
  std::vector<std::size_t> order(specials.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (specials[a].text.size() != specials[b].text.size())
      return specials[a].text.size() > specials[b].text.size();
    return specials[a].id < specials[b].id;
  });
  for (std::size_t r = 0; r < order.size(); ++r) rank_[order[r]] = r;
  order_ = std::move(order);
  for (std::size_t k = 0; k < specials.size(); ++k) {
    const SpecialToken& s = specials[k];
    texts_.push_back(s.text);
    plain_[k] = s.in_plain_text;
    by_text_.emplace(texts_.back(), k);
    if (std::find(lengths_.begin(), lengths_.end(), s.text.size()) == lengths_.end())
      lengths_.push_back(s.text.size());
    first_byte_[1][uint8_t(s.text[0])] = true;
    if (s.in_plain_text) first_byte_[0][uint8_t(s.text[0])] = true;
  }
  std::sort(lengths_.rbegin(), lengths_.rend());
}

std::vector<LongestFirstSpecials::Fragment> LongestFirstSpecials::split(std::string_view text,
                                                                        bool all) const {
  // Every occurrence of every special token, as (claiming order, position).
  std::vector<std::pair<std::size_t, std::size_t>> found;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!first_byte_[all][uint8_t(text[i])]) continue;
    for (std::size_t length : lengths_) {
      if (length > text.size() - i) continue;
      const auto it = by_text_.find(text.substr(i, length));
      if (it != by_text_.end() && (all || plain_[it->second]))
        found.emplace_back(rank_[it->second], i);
    }
  }
  std::sort(found.begin(), found.end());
  // Each token in turn claims its occurrences that touch no byte claimed before.
  std::vector<bool> claimed(text.size());
  std::vector<std::pair<std::size_t, std::size_t>> kept;  // (position, index)
  for (const auto& [rank, at] : found) {
    const std::size_t k = order_[rank], length = texts_[k].size();
    if (std::any_of(claimed.begin() + std::ptrdiff_t(at),
                    claimed.begin() + std::ptrdiff_t(at + length), [](bool c) { return c; }))
      continue;
    std::fill(claimed.begin() + std::ptrdiff_t(at), claimed.begin() + std::ptrdiff_t(at + length),
              true);
    kept.emplace_back(at, k);
  }
  std::sort(kept.begin(), kept.end());
  std::vector<Fragment> out;
  std::size_t from = 0;
  for (const auto& [at, k] : kept) {
    if (at > from) out.push_back({false, from, at});
    out.push_back({true, at, at + texts_[k].size(), k});
    from = at + texts_[k].size();
  }
  if (from < text.size()) out.push_back({false, from, text.size()});
  return out;
}

}  // namespace remat::text
