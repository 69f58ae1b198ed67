#include "tests/reference/residual.h"

namespace remat::ref {

template <class T>
void residual_forward(std::vector<T>& y, const std::vector<T>& a, const std::vector<T>& b,
                      T scale) {
  y.resize(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const T scaled = scale * b[i];
    y[i] = a[i] + scaled;
  }
}

template <class T>
void residual_backward(std::vector<T>& da, std::vector<T>& db, const std::vector<T>& dy,
                       bool accumulate_a, bool accumulate_b, T scale) {
  for (std::size_t i = 0; i < dy.size(); ++i) {
    da[i] = accumulate_a ? da[i] + dy[i] : dy[i];
    const T scaled = scale * dy[i];
    db[i] = accumulate_b ? db[i] + scaled : scaled;
  }
}

template void residual_forward<float>(std::vector<float>&, const std::vector<float>&,
                                      const std::vector<float>&, float);
template void residual_forward<double>(std::vector<double>&, const std::vector<double>&,
                                       const std::vector<double>&, double);
template void residual_backward<float>(std::vector<float>&, std::vector<float>&,
                                       const std::vector<float>&, bool, bool, float);
template void residual_backward<double>(std::vector<double>&, std::vector<double>&,
                                        const std::vector<double>&, bool, bool, double);

}  // namespace remat::ref
