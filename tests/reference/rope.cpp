#include "tests/reference/rope.h"

#include <algorithm>
#include <cmath>

#include "shaders/rope_params.h"

// The angle is reproduced operation by operation, so no multiply-add may be fused here either.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace remat::ref {

float rope_angle(const RopeDims& d, std::size_t t, std::size_t i) {
  const auto inv_d = static_cast<float>(1.0 / double(d.rotary()));
  const auto log2_theta = static_cast<float>(std::log2(double(d.theta)));
  // 2^x as rope_params.h describes: 2^floor(x + 0.5) times a polynomial in the remainder.
  const float x = -(float(2 * i) * inv_d) * log2_theta;
  const float n = std::floor(x + 0.5f);
  const float f = x - n;
  float q;
  REMAT_ROPE_EXP2_POLYNOMIAL(q, f);
  const float base = std::ldexp(q, int(n));
  const RopeScaleTerms k = rope_scale_terms(d.llama3);
  const float s = std::min(std::max(base * k.slope - k.offset, 0.0f), 1.0f);
  const float scale = k.inv_factor + s * (1.0f - k.inv_factor);
  return float(t) * (base * scale);
}

namespace {
// out (=|+=) in with every pair rotated by sign * angle and the pass-through elements as they
// are; cos and sin in T from the float angle.
template <class T>
void rotate(std::vector<T>& out, const std::vector<T>& in, const RopeDims& d, T sign,
            bool accumulate) {
  const std::size_t half = d.rotary() / 2;
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t t = 0; t < d.T; ++t)
      for (std::size_t h = 0; h < d.H; ++h) {
        const std::size_t head = ((b * d.T + t) * d.H + h) * d.D;
        for (std::size_t i = 0; i < half; ++i) {
          const T angle = T(rope_angle(d, t, i));
          const T c = std::cos(angle), s = sign * std::sin(angle);
          const std::size_t a = head + i;
          const T y1 = in[a] * c - in[a + half] * s;
          const T y2 = in[a + half] * c + in[a] * s;
          out[a] = accumulate ? out[a] + y1 : y1;
          out[a + half] = accumulate ? out[a + half] + y2 : y2;
        }
        for (std::size_t e = d.rotary(); e < d.D; ++e)
          out[head + e] = accumulate ? out[head + e] + in[head + e] : in[head + e];
      }
}
}  // namespace

template <class T>
void rope_forward(std::vector<T>& y, const std::vector<T>& x, const RopeDims& d) {
  y.assign(x.size(), T(0));
  rotate(y, x, d, T(1), false);
}

template <class T>
void rope_backward(std::vector<T>& dx, const std::vector<T>& dy, const RopeDims& d,
                   bool accumulate) {
  rotate(dx, dy, d, T(-1), accumulate);
}

template void rope_forward<float>(std::vector<float>&, const std::vector<float>&, const RopeDims&);
template void rope_forward<double>(std::vector<double>&, const std::vector<double>&,
                                   const RopeDims&);
template void rope_backward<float>(std::vector<float>&, const std::vector<float>&, const RopeDims&,
                                   bool);
template void rope_backward<double>(std::vector<double>&, const std::vector<double>&,
                                    const RopeDims&, bool);

}  // namespace remat::ref
