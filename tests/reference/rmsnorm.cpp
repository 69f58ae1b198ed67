#include "tests/reference/rmsnorm.h"

#include <cmath>

namespace remat::ref {

template <class T>
void rmsnorm_forward(std::vector<T>& y, std::vector<T>& rstd, const std::vector<T>& x,
                     const std::vector<T>& w, std::size_t rows, std::size_t C, T eps, T offset) {
  y.assign(rows * C, T(0));
  rstd.assign(rows, T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    const T* xr = &x[r * C];
    T sq = 0;
    for (std::size_t c = 0; c < C; ++c) sq += xr[c] * xr[c];
    const T s = T(1) / std::sqrt(sq / T(C) + eps);
    for (std::size_t c = 0; c < C; ++c) y[r * C + c] = xr[c] * s * (offset + w[c]);
    rstd[r] = s;
  }
}

template <class T>
void rmsnorm_backward(std::vector<T>& dx, std::vector<T>& dw, const std::vector<T>& dy,
                      const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& rstd,
                      std::size_t rows, std::size_t C, bool accumulate_dx, bool accumulate_dw,
                      T offset) {
  if (!accumulate_dw)
    for (std::size_t c = 0; c < C; ++c) dw[c] = T(0);
  for (std::size_t r = 0; r < rows; ++r) {
    // With n = x * rstd and g = dy * w (w: the gain, offset + w), y = n * w and d(rstd)/dx =
    // -rstd^3 x / C give dx = rstd * (g - n * mean(g * n)).
    T gn_mean = 0;
    for (std::size_t c = 0; c < C; ++c)
      gn_mean += dy[r * C + c] * (offset + w[c]) * x[r * C + c] * rstd[r];
    gn_mean /= T(C);
    for (std::size_t c = 0; c < C; ++c) {
      const T n = x[r * C + c] * rstd[r];
      const T v = (dy[r * C + c] * (offset + w[c]) - n * gn_mean) * rstd[r];
      dx[r * C + c] = accumulate_dx ? dx[r * C + c] + v : v;
      dw[c] += dy[r * C + c] * n;
    }
  }
}

#define REMAT_INSTANTIATE(T)                                                                \
  template void rmsnorm_forward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&, \
                                   const std::vector<T>&, std::size_t, std::size_t, T, T);  \
  template void rmsnorm_backward<T>(                                                        \
      std::vector<T>&, std::vector<T>&, const std::vector<T>&, const std::vector<T>&,       \
      const std::vector<T>&, const std::vector<T>&, std::size_t, std::size_t, bool, bool, T);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
