#include "tests/reference/matmul.h"

namespace remat::ref {

template <class T>
void matmul_forward(std::vector<T>& out, const std::vector<T>& inp, const std::vector<T>& w,
                    const std::vector<T>& bias, std::size_t M, std::size_t N, std::size_t K,
                    WeightLayout layout) {
  out.assign(M * N, T(0));
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      double acc = bias.empty() ? 0.0 : double(bias[n]);
      for (std::size_t k = 0; k < K; ++k) {
        const T wkn = layout == WeightLayout::in_out ? w[k * N + n] : w[n * K + k];
        acc += double(inp[m * K + k]) * double(wkn);
      }
      out[m * N + n] = T(acc);
    }
}

template void matmul_forward<float>(std::vector<float>&, const std::vector<float>&,
                                    const std::vector<float>&, const std::vector<float>&,
                                    std::size_t, std::size_t, std::size_t, WeightLayout);
template void matmul_forward<double>(std::vector<double>&, const std::vector<double>&,
                                     const std::vector<double>&, const std::vector<double>&,
                                     std::size_t, std::size_t, std::size_t, WeightLayout);

}  // namespace remat::ref
