#include "tests/reference/gdn_gates.h"

#include <cmath>

namespace remat::ref {

double softplus(double x) {
  return x > 20 ? x : std::log1p(std::exp(x));
}

namespace {
// d softplus / dx: 1 above the threshold (PyTorch's softplus_backward), sigmoid below.
double softplus_grad(double x) {
  return x > 20 ? 1.0 : 1.0 / (1.0 + std::exp(-x));
}
double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
}  // namespace

template <class T>
void gdn_gates_forward(std::vector<T>& g, std::vector<T>& beta, const std::vector<T>& a,
                       const std::vector<T>& b, const std::vector<T>& a_log,
                       const std::vector<T>& dt_bias, std::size_t tokens, std::size_t heads) {
  g.assign(tokens * heads, T(0));
  beta.assign(tokens * heads, T(0));
  for (std::size_t i = 0; i < tokens * heads; ++i) {
    const std::size_t h = i % heads;
    g[i] = T(-std::exp(double(a_log[h])) * softplus(double(a[i] + dt_bias[h])));
    beta[i] = T(sigmoid(double(b[i])));
  }
}

template <class T>
void gdn_gates_backward(std::vector<T>& da, std::vector<T>& db, std::vector<T>& da_log,
                        std::vector<T>& ddt_bias, const std::vector<T>& dg,
                        const std::vector<T>& dbeta, const std::vector<T>& a,
                        const std::vector<T>& b, const std::vector<T>& a_log,
                        const std::vector<T>& dt_bias, std::size_t tokens, std::size_t heads,
                        GatesGrads flags) {
  if (!flags.accumulate_params) {
    da_log.assign(heads, T(0));
    ddt_bias.assign(heads, T(0));
  }
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t i = t * heads + h;
      const double pre = double(a[i] + dt_bias[h]), neg_a = -std::exp(double(a_log[h]));
      const T vda = T(double(dg[i]) * neg_a * softplus_grad(pre));
      // 1 - sigmoid(b) as sigmoid(-b): exact in its tail, where 1 - s would round to 0.
      const T vdb = T(double(dbeta[i]) * sigmoid(double(b[i])) * sigmoid(-double(b[i])));
      da[i] = flags.accumulate_da ? da[i] + vda : vda;
      db[i] = flags.accumulate_db ? db[i] + vdb : vdb;
      // dg/dA_log = -exp(A_log) softplus(pre) = g; dg/ddt_bias = dg/da.
      da_log[h] += dg[i] * T(neg_a * softplus(pre));
      ddt_bias[h] += vda;
    }
}

#define REMAT_INSTANTIATE(T)                                                                      \
  template void gdn_gates_forward<T>(std::vector<T>&, std::vector<T>&, const std::vector<T>&,     \
                                     const std::vector<T>&, const std::vector<T>&,                \
                                     const std::vector<T>&, std::size_t, std::size_t);            \
  template void gdn_gates_backward<T>(                                                            \
      std::vector<T>&, std::vector<T>&, std::vector<T>&, std::vector<T>&, const std::vector<T>&,  \
      const std::vector<T>&, const std::vector<T>&, const std::vector<T>&, const std::vector<T>&, \
      const std::vector<T>&, std::size_t, std::size_t, GatesGrads);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
