#include "tests/reference/l2norm.h"

#include <cmath>

namespace remat::ref {

namespace {
std::size_t base(const L2normLayout& l, std::size_t t, std::size_t h) {
  return t * l.stride + l.offset + h * l.D;
}

template <class T>
T inverse_norm(const std::vector<T>& x, std::size_t b, const L2normLayout& l) {
  T sq = 0;
  for (std::size_t d = 0; d < l.D; ++d) sq += x[b + d] * x[b + d];
  return T(1) / std::sqrt(sq + T(l.eps));
}
}  // namespace

template <class T>
void l2norm_forward(std::vector<T>& y, const std::vector<T>& x, const L2normLayout& l) {
  y.assign(l.tokens * l.heads * l.D, T(0));
  for (std::size_t t = 0; t < l.tokens; ++t)
    for (std::size_t h = 0; h < l.heads; ++h) {
      const std::size_t b = base(l, t, h);
      const T r = inverse_norm(x, b, l);
      for (std::size_t d = 0; d < l.D; ++d)
        y[(t * l.heads + h) * l.D + d] = x[b + d] * r * T(l.scale);
    }
}

template <class T>
void l2norm_backward(std::vector<T>& dx, const std::vector<T>& dy, const std::vector<T>& x,
                     const L2normLayout& l, bool accumulate) {
  for (std::size_t t = 0; t < l.tokens; ++t)
    for (std::size_t h = 0; h < l.heads; ++h) {
      const std::size_t b = base(l, t, h), row = (t * l.heads + h) * l.D;
      const T r = inverse_norm(x, b, l);
      // y = s x r with dr/dx = -r^3 x: dx = s r (dy - n sum(dy n)), n = x r.
      T dot = 0;
      for (std::size_t d = 0; d < l.D; ++d) dot += dy[row + d] * x[b + d] * r;
      for (std::size_t d = 0; d < l.D; ++d) {
        const T v = T(l.scale) * r * (dy[row + d] - x[b + d] * r * dot);
        dx[b + d] = accumulate ? dx[b + d] + v : v;
      }
    }
}

#define REMAT_INSTANTIATE(T)                                                                      \
  template void l2norm_forward<T>(std::vector<T>&, const std::vector<T>&, const L2normLayout&);   \
  template void l2norm_backward<T>(std::vector<T>&, const std::vector<T>&, const std::vector<T>&, \
                                   const L2normLayout&, bool);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
