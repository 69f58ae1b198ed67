#include "tests/reference/causal_conv1d.h"

#include <algorithm>
#include <cmath>

namespace remat::ref {

namespace {
template <class T>
T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

// How many steps back token (r, t)'s window reaches before leaving its example (never past the
// row's start).
std::size_t reach(const Conv1dLayout& l, std::size_t r, std::size_t t) {
  return l.positions.empty() ? t : std::min<std::size_t>(l.positions[r * l.T + t], t);
}

template <class T>
T pre_activation(const std::vector<T>& x, const std::vector<T>& w, const Conv1dLayout& l,
                 std::size_t r, std::size_t t, std::size_t c) {
  T acc = 0;
  for (std::size_t back = 0; back < l.K && back <= reach(l, r, t); ++back)
    acc += w[c * l.K + l.K - 1 - back] * x[((r * l.T) + t - back) * l.C + c];
  return acc;
}
}  // namespace

template <class T>
void causal_conv1d_forward(std::vector<T>& y, const std::vector<T>& x, const std::vector<T>& w,
                           const Conv1dLayout& l) {
  y.assign(l.rows * l.T * l.C, T(0));
  for (std::size_t r = 0; r < l.rows; ++r)
    for (std::size_t t = 0; t < l.T; ++t)
      for (std::size_t c = 0; c < l.C; ++c) {
        const T v = pre_activation(x, w, l, r, t, c);
        y[(r * l.T + t) * l.C + c] = v * sigmoid(v);
      }
}

template <class T>
void causal_conv1d_backward(std::vector<T>& dx, std::vector<T>& dw, const std::vector<T>& dy,
                            const std::vector<T>& x, const std::vector<T>& w, const Conv1dLayout& l,
                            bool accumulate_dx, bool accumulate_dw) {
  if (!accumulate_dx) dx.assign(dx.size(), T(0));
  if (!accumulate_dw) dw.assign(dw.size(), T(0));
  for (std::size_t r = 0; r < l.rows; ++r)
    for (std::size_t t = 0; t < l.T; ++t)
      for (std::size_t c = 0; c < l.C; ++c) {
        const T v = pre_activation(x, w, l, r, t, c);
        const T s = sigmoid(v);
        // silu'(v) = s + v s (1 - s)
        const T dpre = dy[(r * l.T + t) * l.C + c] * (s + v * s * (T(1) - s));
        for (std::size_t back = 0; back < l.K && back <= reach(l, r, t); ++back) {
          const std::size_t src = ((r * l.T) + t - back) * l.C + c, k = l.K - 1 - back;
          dx[src] += dpre * w[c * l.K + k];
          dw[c * l.K + k] += dpre * x[src];
        }
      }
}

#define REMAT_INSTANTIATE(T)                                                                       \
  template void causal_conv1d_forward<T>(std::vector<T>&, const std::vector<T>&,                   \
                                         const std::vector<T>&, const Conv1dLayout&);              \
  template void causal_conv1d_backward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&, \
                                          const std::vector<T>&, const std::vector<T>&,            \
                                          const Conv1dLayout&, bool, bool);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
