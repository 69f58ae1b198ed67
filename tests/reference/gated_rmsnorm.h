// Plain reference for Gated DeltaNet's output norm, y = rmsnorm(o) * w * silu(z), forward and
// backward side by side, written for clarity.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

// y[rows,D] = o * rstd * w * silu(z), rstd = 1/sqrt(mean(o^2) + eps). Resizes y and rstd.
template <class T>
void gated_rmsnorm_forward(std::vector<T>& y, std::vector<T>& rstd, const std::vector<T>& o,
                           const std::vector<T>& z, const std::vector<T>& w, std::size_t rows,
                           std::size_t D, T eps);

// d_o, dz [rows, D] and dw [D], all sized already; dw sums rows 0, 1, 2, ...
template <class T>
void gated_rmsnorm_backward(std::vector<T>& d_o, std::vector<T>& dz, std::vector<T>& dw,
                            const std::vector<T>& dy, const std::vector<T>& o,
                            const std::vector<T>& z, const std::vector<T>& w,
                            const std::vector<T>& rstd, std::size_t rows, std::size_t D,
                            bool accumulate);
}  // namespace remat::ref
