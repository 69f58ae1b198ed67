#include "tests/reference/swiglu.h"

#include <cmath>

namespace remat::ref {

namespace {
template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}
}  // namespace

template <class T>
void swiglu_forward(std::vector<T>& h, const std::vector<T>& g, const std::vector<T>& u) {
  h.resize(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) h[i] = g[i] * sigmoid(g[i]) * u[i];
}

template <class T>
void swiglu_backward(std::vector<T>& dg, std::vector<T>& du, const std::vector<T>& dh,
                     const std::vector<T>& g, const std::vector<T>& u, bool accumulate_dg,
                     bool accumulate_du) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    const T s = sigmoid(g[i]);
    // Product rule on g * sigmoid(g), with sigmoid' = s (1 - s).
    const T dsilu = s + g[i] * s * (T(1) - s);
    const T vg = dh[i] * u[i] * dsilu;
    const T vu = dh[i] * g[i] * s;
    dg[i] = accumulate_dg ? dg[i] + vg : vg;
    du[i] = accumulate_du ? du[i] + vu : vu;
  }
}

#define REMAT_INSTANTIATE(T)                                                                      \
  template void swiglu_forward<T>(std::vector<T>&, const std::vector<T>&, const std::vector<T>&); \
  template void swiglu_backward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&,       \
                                   const std::vector<T>&, const std::vector<T>&, bool, bool);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
