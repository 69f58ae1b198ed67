#include "tests/reference/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "base/ignore_target.h"

namespace remat::ref {

template <class T>
void cross_entropy_forward(std::vector<T>& losses, const std::vector<T>& logits,
                           const std::vector<uint32_t>& targets, std::size_t rows, std::size_t V) {
  losses.assign(rows, T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    if (targets[r] == kIgnoreTarget) continue;  // not trained: loss 0
    const T* l = &logits[r * V];
    const T m = *std::max_element(l, l + V);  // subtracting the max keeps exp() finite
    T sum = 0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(l[v] - m);
    losses[r] = std::log(sum) + m - l[targets[r]];
  }
}

template <class T>
void cross_entropy_backward(std::vector<T>& dlogits, const std::vector<T>& logits,
                            const std::vector<uint32_t>& targets, std::size_t rows, std::size_t V,
                            T scale) {
  dlogits.assign(rows * V, T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    if (targets[r] == kIgnoreTarget) continue;  // not trained: no gradient
    const T* l = &logits[r * V];
    const T m = *std::max_element(l, l + V);
    T sum = 0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(l[v] - m);
    for (std::size_t v = 0; v < V; ++v) {
      const T prob = std::exp(l[v] - m) / sum;
      dlogits[r * V + v] = scale * (prob - (v == targets[r] ? T(1) : T(0)));
    }
  }
}

template void cross_entropy_forward<float>(std::vector<float>&, const std::vector<float>&,
                                           const std::vector<uint32_t>&, std::size_t, std::size_t);
template void cross_entropy_forward<double>(std::vector<double>&, const std::vector<double>&,
                                            const std::vector<uint32_t>&, std::size_t, std::size_t);
template void cross_entropy_backward<float>(std::vector<float>&, const std::vector<float>&,
                                            const std::vector<uint32_t>&, std::size_t, std::size_t,
                                            float);
template void cross_entropy_backward<double>(std::vector<double>&, const std::vector<double>&,
                                             const std::vector<uint32_t>&, std::size_t, std::size_t,
                                             double);

}  // namespace remat::ref
