// Comparing two runs' updates where they may differ only by float rounding (sums taken in
// another order): each element's difference of updates, relative to its tensor's largest update.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace remat::test {

using Parameters = std::vector<std::pair<std::string, std::vector<float>>>;

// The largest difference of the updates (w - w0), relative to each tensor's largest update.
inline double worst_update_difference(const Parameters& a, const Parameters& b,
                                      const Parameters& w0) {
  double worst = 0;
  for (std::size_t p = 0; p < w0.size(); ++p) {
    double largest = 0;
    for (std::size_t i = 0; i < w0[p].second.size(); ++i)
      largest = std::max(largest, std::abs(double(a[p].second[i]) - w0[p].second[i]));
    for (std::size_t i = 0; i < w0[p].second.size(); ++i) {
      const double da = double(a[p].second[i]) - w0[p].second[i];
      const double db = double(b[p].second[i]) - w0[p].second[i];
      worst = std::max(worst, std::abs(da - db) / largest);
    }
  }
  return worst;
}

}  // namespace remat::test
