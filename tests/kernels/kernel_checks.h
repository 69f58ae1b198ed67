// Comparisons shared by the kernel tests: GPU results against a double-precision reference,
// reference gradients against central finite differences, and bit-identity of two runs.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace remat::test {

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// Every element satisfies |gpu - ref| <= rtol * |ref| + atol (NaN fails). Reports the worst
// element, so a failure says how far off it was, not only that it was.
inline void require_close(const std::vector<float>& gpu, const std::vector<double>& ref,
                          double rtol, double atol, const std::string& what) {
  REQUIRE(gpu.size() == ref.size());
  std::size_t worst = 0, bad = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const double err = std::abs(double(gpu[i]) - ref[i]);
    const double allowed = rtol * std::abs(ref[i]) + atol;
    const double excess = std::isnan(err) ? 1e300 : err / allowed;
    if (!(err <= allowed)) ++bad;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  INFO(what << ": " << bad << " of " << gpu.size() << " elements outside rtol " << rtol << " atol "
            << atol << "; worst at " << worst << ": gpu " << gpu[worst] << " ref " << ref[worst]
            << " (" << worst_excess << "x the allowed error)");
  REQUIRE(bad == 0);
}

// Bitwise equality (NaN patterns included), as the determinism guarantee demands.
template <class T>
bool bit_identical(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Central differences of `loss` with respect to every element of `param` (perturbed in place
// and restored) against `analytic`: |fd - analytic| <= tol * max(1, |analytic|), i.e. relative
// for gradients of magnitude >= 1 and absolute below, where relative error loses meaning.
inline void require_matches_finite_differences(const std::function<double()>& loss,
                                               std::vector<double>& param,
                                               const std::vector<double>& analytic,
                                               const std::string& what, double tol = 1e-6) {
  REQUIRE(param.size() == analytic.size());
  double worst = 0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < param.size(); ++i) {
    const double saved = param[i];
    // Step ~ cbrt(machine epsilon) balances truncation (h^2) against rounding (eps / h).
    const double h = 1e-5 * std::max(1.0, std::abs(saved));
    param[i] = saved + h;
    const double up = loss();
    param[i] = saved - h;
    const double down = loss();
    param[i] = saved;
    const double fd = (up - down) / (2 * h);
    const double err = std::abs(fd - analytic[i]) / std::max(1.0, std::abs(analytic[i]));
    if (!(err <= worst)) worst = err, worst_i = i;
  }
  INFO(what << ": worst finite-difference error " << worst << " at element " << worst_i
            << " (analytic " << analytic[worst_i] << ")");
  REQUIRE(worst <= tol);
}

// sum(out * weights): a scalar loss in which every output element matters, so its gradient
// with respect to `out` is `weights`.
inline double weighted_sum(const std::vector<double>& out, const std::vector<double>& weights) {
  double s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += out[i] * weights[i];
  return s;
}

}  // namespace remat::test
