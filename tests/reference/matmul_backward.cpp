#include "tests/reference/matmul_backward.h"

namespace remat::ref {

template <class T>
void matmul_backward(std::vector<T>& dinp, std::vector<T>& dw, std::vector<T>& dbias,
                     const std::vector<T>& dout, const std::vector<T>& inp, const std::vector<T>& w,
                     std::size_t M, std::size_t N, std::size_t K, WeightLayout layout) {
  auto w_index = [&](std::size_t k, std::size_t n) {
    return layout == WeightLayout::in_out ? k * N + n : n * K + k;
  };

  // The gradient flowing into the input: each input feature fed every output through W(k,n).
  dinp.assign(M * K, T(0));
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t k = 0; k < K; ++k) {
      double acc = 0.0;
      for (std::size_t n = 0; n < N; ++n) acc += double(dout[m * N + n]) * double(w[w_index(k, n)]);
      dinp[m * K + k] = T(acc);
    }

  // The weight gradient sums over every row (every position of every sequence).
  dw.assign(K * N, T(0));
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (std::size_t m = 0; m < M; ++m) acc += double(inp[m * K + k]) * double(dout[m * N + n]);
      dw[w_index(k, n)] = T(acc);
    }

  // The bias is added to every row, so its gradient is the column sum.
  dbias.assign(N, T(0));
  for (std::size_t n = 0; n < N; ++n) {
    double acc = 0.0;
    for (std::size_t m = 0; m < M; ++m) acc += double(dout[m * N + n]);
    dbias[n] = T(acc);
  }
}

template void matmul_backward<float>(std::vector<float>&, std::vector<float>&, std::vector<float>&,
                                     const std::vector<float>&, const std::vector<float>&,
                                     const std::vector<float>&, std::size_t, std::size_t,
                                     std::size_t, WeightLayout);
template void matmul_backward<double>(std::vector<double>&, std::vector<double>&,
                                      std::vector<double>&, const std::vector<double>&,
                                      const std::vector<double>&, const std::vector<double>&,
                                      std::size_t, std::size_t, std::size_t, WeightLayout);

}  // namespace remat::ref
