#include "text/split_behavior.h"

#include <stdexcept>

namespace remat::text {

std::optional<SplitBehavior> split_behavior(std::string_view name) {
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  return std::nullopt;
}

namespace {

using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

// A delimiter that does not follow another joins the range before it.
Ranges merged_with_previous(const std::vector<SplitPart>& parts) {
  Ranges out;
  bool previous_delimiter = false;
  for (const SplitPart& p : parts) {
    if (p.delimiter && !previous_delimiter && !out.empty())
      out.back().second = p.end;
    else
      out.emplace_back(p.begin, p.end);
    previous_delimiter = p.delimiter;
  }
  return out;
}

// The mirror image: walked from the end, a delimiter joins the range after it.
Ranges merged_with_next(const std::vector<SplitPart>& parts) {
  Ranges out;
  bool next_delimiter = false;
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) {
    if (p->delimiter && !next_delimiter && !out.empty())
      out.back().first = p->begin;
    else
      out.emplace_back(p->begin, p->end);
    next_delimiter = p->delimiter;
  }
  return Ranges(out.rbegin(), out.rend());
}

// Runs of delimiters become one range (parts alternate otherwise).
Ranges contiguous(const std::vector<SplitPart>& parts) {
  Ranges out;
  bool previous_delimiter = false;
  for (const SplitPart& p : parts) {
    if (p.delimiter && previous_delimiter && !out.empty())
      out.back().second = p.end;
    else
      out.emplace_back(p.begin, p.end);
    previous_delimiter = p.delimiter;
  }
  return out;
}

}  // namespace

Ranges split_pieces(const std::vector<SplitPart>& parts, SplitBehavior behavior) {
  Ranges out;
  switch (behavior) {
    case SplitBehavior::removed:
      for (const SplitPart& p : parts)
        if (!p.delimiter) out.emplace_back(p.begin, p.end);
      return out;
    case SplitBehavior::isolated:
      for (const SplitPart& p : parts) out.emplace_back(p.begin, p.end);
      return out;
    case SplitBehavior::merged_with_previous:
      return merged_with_previous(parts);
    case SplitBehavior::merged_with_next:
      return merged_with_next(parts);
    case SplitBehavior::contiguous:
      return contiguous(parts);
  }
  return out;
}

SplitStage::SplitStage(std::string_view pattern, bool literal, SplitBehavior behavior, bool invert)
    : behavior_(behavior), invert_(invert) {
  if (literal) {
    if (pattern.empty()) throw std::invalid_argument("pattern: an empty string splits nothing");
    literal_ = pattern;
  } else {
    regex_ = std::make_unique<Regex>(with_unicode_whitespace(pattern));
  }
}

SplitStage::~SplitStage() = default;

std::vector<SplitPart> SplitStage::parts(std::string_view text) {
  parts_.clear();
  std::size_t at = 0, begin = 0, end = 0;
  const auto next = [&] {
    if (regex_) return regex_->find(text, at, begin, end);
    begin = text.find(literal_, at);
    end = begin + literal_.size();
    return begin != std::string_view::npos;
  };
  while (at < text.size() && next()) {
    if (begin > at) parts_.push_back({at, begin, invert_});
    parts_.push_back({begin, end, !invert_});
    at = end;
  }
  if (at < text.size()) parts_.push_back({at, text.size(), invert_});
  return parts_;
}

void SplitStage::split(std::string_view text, bool first, const Emit& emit) {
  for (const auto& [begin, end] : split_pieces(parts(text), behavior_))
    if (end > begin) emit(text.substr(begin, end - begin), first && begin == 0);
}

}  // namespace remat::text
