// Plain reference for Gated DeltaNet's decay and beta gates, forward and backward side by side,
// written for clarity.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

// softplus as PyTorch's F.softplus (beta 1, threshold 20): x above 20, log1p(exp(x)) below.
double softplus(double x);

// g = -exp(A_log[h]) * softplus(a + dt_bias[h]), beta = sigmoid(b) over [tokens, heads].
// Resizes g and beta.
template <class T>
void gdn_gates_forward(std::vector<T>& g, std::vector<T>& beta, const std::vector<T>& a,
                       const std::vector<T>& b, const std::vector<T>& a_log,
                       const std::vector<T>& dt_bias, std::size_t tokens, std::size_t heads);

struct GatesGrads {
  bool accumulate_da = false, accumulate_db = false, accumulate_params = false;
};

// da, db [tokens, heads], da_log, ddt_bias [heads], all sized already; the per-head sums run
// over tokens 0, 1, 2, ...
template <class T>
void gdn_gates_backward(std::vector<T>& da, std::vector<T>& db, std::vector<T>& da_log,
                        std::vector<T>& ddt_bias, const std::vector<T>& dg,
                        const std::vector<T>& dbeta, const std::vector<T>& a,
                        const std::vector<T>& b, const std::vector<T>& a_log,
                        const std::vector<T>& dt_bias, std::size_t tokens, std::size_t heads,
                        GatesGrads flags);

}  // namespace remat::ref
