#include "planner/policy.h"

#include <charconv>
#include <stdexcept>

namespace remat {

Policy Policy::parse(std::string_view text) {
  Policy p;
  if (text == "none") return p;
  if (text == "sqrt") return {Kind::sqrt, 0};
  if (text == "selective") return {Kind::selective, 0};
  if (text == "auto") return {Kind::automatic, 0};
  if (text.starts_with("every:")) {
    const std::string_view num = text.substr(6);
    int k = 0;
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), k);
    if (ec != std::errc() || ptr != num.data() + num.size() || k < 1)
      throw std::invalid_argument("policy '" + std::string(text) +
                                  "' needs a positive interval, e.g. every:4");
    return {Kind::every, k};
  }
  throw std::invalid_argument("unknown policy '" + std::string(text) +
                              "'; use none, every:K, sqrt, selective or auto");
}

std::string Policy::to_string() const {
  switch (kind) {
    case Kind::none:
      return "none";
    case Kind::every:
      return "every:" + std::to_string(interval);
    case Kind::sqrt:
      return "sqrt";
    case Kind::selective:
      return "selective";
    case Kind::automatic:
      return "auto";
  }
  return "?";
}

}  // namespace remat
