#include "tests/reference/swiglu.h"

#include <cmath>

namespace remat::ref {

namespace {
template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// The tanh GELU's inner argument and its derivative.
template <class T>
T gelu_arg(T x) {
  return T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
}
template <class T>
T gelu_arg_grad(T x) {
  return T(0.79788456080286535588) * (T(1) + T(3) * T(0.044715) * x * x);
}

// The gate's activation: silu(x) = x sigmoid(x), or gelu(x) = 0.5 x (1 + tanh(gelu_arg(x))).
template <class T>
T activation(T x, bool gelu) {
  return gelu ? T(0.5) * x * (T(1) + std::tanh(gelu_arg(x))) : x * sigmoid(x);
}

template <class T>
T activation_grad(T x, bool gelu) {
  if (gelu) {  // product rule on 0.5 x (1 + tanh a), tanh' = 1 - tanh^2
    const T t = std::tanh(gelu_arg(x));
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * gelu_arg_grad(x);
  }
  const T s = sigmoid(x);
  return s + x * s * (T(1) - s);  // product rule on x sigmoid(x), sigmoid' = s (1 - s)
}
}  // namespace

template <class T>
void swiglu_forward(std::vector<T>& h, const std::vector<T>& g, const std::vector<T>& u,
                    bool gelu_gate) {
  h.resize(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) h[i] = activation(g[i], gelu_gate) * u[i];
}

template <class T>
void swiglu_backward(std::vector<T>& dg, std::vector<T>& du, const std::vector<T>& dh,
                     const std::vector<T>& g, const std::vector<T>& u, bool accumulate_dg,
                     bool accumulate_du, bool gelu_gate) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    const T vg = dh[i] * u[i] * activation_grad(g[i], gelu_gate);
    const T vu = dh[i] * activation(g[i], gelu_gate);
    dg[i] = accumulate_dg ? dg[i] + vg : vg;
    du[i] = accumulate_du ? du[i] + vu : vu;
  }
}

#define REMAT_INSTANTIATE(T)                                                                     \
  template void swiglu_forward<T>(std::vector<T>&, const std::vector<T>&, const std::vector<T>&, \
                                  bool);                                                         \
  template void swiglu_backward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&,      \
                                   const std::vector<T>&, const std::vector<T>&, bool, bool,     \
                                   bool);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
