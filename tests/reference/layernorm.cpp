#include "tests/reference/layernorm.h"

#include <cmath>

namespace remat::ref {

template <class T>
void layernorm_forward(std::vector<T>& y, std::vector<T>& mean, std::vector<T>& rstd,
                       const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                       std::size_t rows, std::size_t C, T eps) {
  y.assign(rows * C, T(0));
  mean.assign(rows, T(0));
  rstd.assign(rows, T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    const T* xr = &x[r * C];
    T m = 0;
    for (std::size_t c = 0; c < C; ++c) m += xr[c];
    m /= T(C);
    T var = 0;
    for (std::size_t c = 0; c < C; ++c) var += (xr[c] - m) * (xr[c] - m);
    var /= T(C);
    const T s = T(1) / std::sqrt(var + eps);
    for (std::size_t c = 0; c < C; ++c) y[r * C + c] = (xr[c] - m) * s * w[c] + b[c];
    mean[r] = m;
    rstd[r] = s;
  }
}

template <class T>
void layernorm_backward(std::vector<T>& dx, std::vector<T>& dw, std::vector<T>& db,
                        const std::vector<T>& dy, const std::vector<T>& x, const std::vector<T>& w,
                        const std::vector<T>& mean, const std::vector<T>& rstd, std::size_t rows,
                        std::size_t C, bool accumulate_dx, bool accumulate_dw) {
  if (!accumulate_dw)
    for (std::size_t c = 0; c < C; ++c) dw[c] = db[c] = T(0);
  for (std::size_t r = 0; r < rows; ++r) {
    // With n = normalized x and g = dy * w, y = n * w + b gives
    // dx = rstd * (g - mean(g) - n * mean(g * n)).
    T g_mean = 0, gn_mean = 0;
    for (std::size_t c = 0; c < C; ++c) {
      const T n = (x[r * C + c] - mean[r]) * rstd[r];
      const T g = dy[r * C + c] * w[c];
      g_mean += g;
      gn_mean += g * n;
    }
    g_mean /= T(C);
    gn_mean /= T(C);
    for (std::size_t c = 0; c < C; ++c) {
      const T n = (x[r * C + c] - mean[r]) * rstd[r];
      const T g = dy[r * C + c] * w[c];
      const T v = (g - g_mean - n * gn_mean) * rstd[r];
      dx[r * C + c] = accumulate_dx ? dx[r * C + c] + v : v;
      dw[c] += dy[r * C + c] * n;
      db[c] += dy[r * C + c];
    }
  }
}

#define REMAT_INSTANTIATE(T)                                                                      \
  template void layernorm_forward<T>(std::vector<T>&, std::vector<T>&, std::vector<T>&,           \
                                     const std::vector<T>&, const std::vector<T>&,                \
                                     const std::vector<T>&, std::size_t, std::size_t, T);         \
  template void layernorm_backward<T>(                                                            \
      std::vector<T>&, std::vector<T>&, std::vector<T>&, const std::vector<T>&,                   \
      const std::vector<T>&, const std::vector<T>&, const std::vector<T>&, const std::vector<T>&, \
      std::size_t, std::size_t, bool, bool);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
