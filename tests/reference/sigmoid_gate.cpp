#include "tests/reference/sigmoid_gate.h"

#include <cmath>

namespace remat::ref {

namespace {
template <class T>
T sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}
std::size_t gate_index(const GateLayout& l, std::size_t i) {
  return (i / l.D) * l.gate_head_stride + l.gate_offset + i % l.D;
}
}  // namespace

template <class T>
void sigmoid_gate_forward(std::vector<T>& y, const std::vector<T>& x, const std::vector<T>& gate,
                          const GateLayout& l) {
  y.assign(l.count, T(0));
  for (std::size_t i = 0; i < l.count; ++i) y[i] = x[i] * sigmoid(gate[gate_index(l, i)]);
}

template <class T>
void sigmoid_gate_backward(std::vector<T>& dx, std::vector<T>& dgate, const std::vector<T>& dy,
                           const std::vector<T>& x, const std::vector<T>& gate, const GateLayout& l,
                           bool accumulate) {
  for (std::size_t i = 0; i < l.count; ++i) {
    const std::size_t j = gate_index(l, i);
    const T s = sigmoid(gate[j]);
    const T vx = dy[i] * s, vg = dy[i] * x[i] * s * (T(1) - s);
    dx[i] = accumulate ? dx[i] + vx : vx;
    dgate[j] = accumulate ? dgate[j] + vg : vg;
  }
}

#define REMAT_INSTANTIATE(T)                                                                      \
  template void sigmoid_gate_forward<T>(std::vector<T>&, const std::vector<T>&,                   \
                                        const std::vector<T>&, const GateLayout&);                \
  template void sigmoid_gate_backward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&, \
                                         const std::vector<T>&, const std::vector<T>&,            \
                                         const GateLayout&, bool);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
