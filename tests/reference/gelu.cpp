#include "tests/reference/gelu.h"

#include <cmath>

namespace remat::ref {

namespace {
template <class T>
constexpr T kSqrt2OverPi = T(0.79788456080286535588);  // sqrt(2 / pi)
}

template <class T>
void gelu_forward(std::vector<T>& y, const std::vector<T>& x) {
  y.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const T v = x[i];
    const T u = kSqrt2OverPi<T> * (v + T(0.044715) * v * v * v);
    y[i] = T(0.5) * v * (T(1) + std::tanh(u));
  }
}

template <class T>
void gelu_backward(std::vector<T>& dx, const std::vector<T>& dy, const std::vector<T>& x,
                   bool accumulate) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const T v = x[i];
    const T u = kSqrt2OverPi<T> * (v + T(0.044715) * v * v * v);
    const T t = std::tanh(u);
    const T du = kSqrt2OverPi<T> * (T(1) + T(3) * T(0.044715) * v * v);
    // Product rule on 0.5 x (1 + tanh u), with tanh' = 1 - tanh^2.
    const T grad = T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du;
    dx[i] = accumulate ? dx[i] + dy[i] * grad : dy[i] * grad;
  }
}

template void gelu_forward<float>(std::vector<float>&, const std::vector<float>&);
template void gelu_forward<double>(std::vector<double>&, const std::vector<double>&);
template void gelu_backward<float>(std::vector<float>&, const std::vector<float>&,
                                   const std::vector<float>&, bool);
template void gelu_backward<double>(std::vector<double>&, const std::vector<double>&,
                                    const std::vector<double>&, bool);

}  // namespace remat::ref
