#include "tests/reference/gated_rmsnorm.h"

#include <cmath>

namespace remat::ref {

namespace {
template <class T>
T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}
template <class T>
T silu(T v) {
  return v * sigmoid(v);
}
template <class T>
T silu_grad(T v) {
  const T s = sigmoid(v);
  return s + v * s * (T(1) - s);
}
}  // namespace

template <class T>
void gated_rmsnorm_forward(std::vector<T>& y, std::vector<T>& rstd, const std::vector<T>& o,
                           const std::vector<T>& z, const std::vector<T>& w, std::size_t rows,
                           std::size_t D, T eps) {
  y.assign(rows * D, T(0));
  rstd.assign(rows, T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    T sq = 0;
    for (std::size_t d = 0; d < D; ++d) sq += o[r * D + d] * o[r * D + d];
    rstd[r] = T(1) / std::sqrt(sq / T(D) + eps);
    for (std::size_t d = 0; d < D; ++d)
      y[r * D + d] = o[r * D + d] * rstd[r] * w[d] * silu(z[r * D + d]);
  }
}

template <class T>
void gated_rmsnorm_backward(std::vector<T>& d_o, std::vector<T>& dz, std::vector<T>& dw,
                            const std::vector<T>& dy, const std::vector<T>& o,
                            const std::vector<T>& z, const std::vector<T>& w,
                            const std::vector<T>& rstd, std::size_t rows, std::size_t D,
                            bool accumulate) {
  if (!accumulate) dw.assign(D, T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    // The gradient reaching n = o * rstd is g = dy * w * silu(z); RMSNorm's dx follows.
    T gn_mean = 0;
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t i = r * D + d;
      gn_mean += dy[i] * w[d] * silu(z[i]) * o[i] * rstd[r];
    }
    gn_mean /= T(D);
    for (std::size_t d = 0; d < D; ++d) {
      const std::size_t i = r * D + d;
      const T n = o[i] * rstd[r];
      const T vo = (dy[i] * w[d] * silu(z[i]) - n * gn_mean) * rstd[r];
      const T vz = dy[i] * n * w[d] * silu_grad(z[i]);
      d_o[i] = accumulate ? d_o[i] + vo : vo;
      dz[i] = accumulate ? dz[i] + vz : vz;
      dw[d] += dy[i] * n * silu(z[i]);
    }
  }
}

#define REMAT_INSTANTIATE(T)                                                                      \
  template void gated_rmsnorm_forward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&, \
                                         const std::vector<T>&, const std::vector<T>&,            \
                                         std::size_t, std::size_t, T);                            \
  template void gated_rmsnorm_backward<T>(std::vector<T>&, std::vector<T>&, std::vector<T>&,      \
                                          const std::vector<T>&, const std::vector<T>&,           \
                                          const std::vector<T>&, const std::vector<T>&,           \
                                          const std::vector<T>&, std::size_t, std::size_t, bool);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
