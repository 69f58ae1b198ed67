#include "text/metaspace.h"

#include <stdexcept>

#include "text/byte_unicode.h"

namespace remat::text {

std::optional<PrependScheme> prepend_scheme(std::string_view name) {
  if (name == "always") return PrependScheme::always;
  if (name == "first") return PrependScheme::first;
  if (name == "never") return PrependScheme::never;
  return std::nullopt;
}

MetaspaceStage::MetaspaceStage(std::string replacement, PrependScheme scheme, bool split)
    : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {
  char32_t c = 0;
  if (replacement_.empty() || decode_utf8(replacement_, 0, c) != replacement_.size())
    throw std::invalid_argument("the replacement '" + replacement_ +
                                "' is not one UTF-8 character");
}

void MetaspaceStage::split(std::string_view text, bool first, const Emit& emit) {
  const bool starts_replaced = text.substr(0, 1) == " " || text.rfind(replacement_, 0) == 0;
  const bool prepend =
      scheme_ == PrependScheme::always || (scheme_ == PrependScheme::first && first);
  // A stage's pieces are split before the next piece arrives, so one buffer serves every call.
  std::string rewritten = prepend && !starts_replaced ? replacement_ : "";
  for (char c : text) {
    if (c == ' ')
      rewritten += replacement_;
    else
      rewritten += c;
  }
  rewritten_.swap(rewritten);
  const std::string_view all(rewritten_);
  if (!split_) {
    emit(all, first);
    return;
  }
  // MergedWithNext on the replacement: each piece starts at a replacement (or the text's start).
  std::size_t start = 0;
  for (std::size_t at = all.find(replacement_, 1); at != std::string_view::npos;
       at = all.find(replacement_, at + replacement_.size())) {
    emit(all.substr(start, at - start), first && start == 0);
    start = at;
  }
  emit(all.substr(start), first && start == 0);
}

}  // namespace remat::text
