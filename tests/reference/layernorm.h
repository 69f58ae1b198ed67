// Plain reference for LayerNorm over the last axis (eps, biased variance), forward and backward
// side by side, written for clarity.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

// y[rows,C] = (x - mean) * rstd * w + b, rstd = 1/sqrt(var + eps). Resizes y, mean, rstd.
template <class T>
void layernorm_forward(std::vector<T>& y, std::vector<T>& mean, std::vector<T>& rstd,
                       const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                       std::size_t rows, std::size_t C, T eps = T(1e-5));

// dx, dw, db from dy. Gradients must be sized already; with accumulate they are added to,
// otherwise overwritten. dw/db accumulate from their old value over rows 0, 1, 2, ...
template <class T>
void layernorm_backward(std::vector<T>& dx, std::vector<T>& dw, std::vector<T>& db,
                        const std::vector<T>& dy, const std::vector<T>& x, const std::vector<T>& w,
                        const std::vector<T>& mean, const std::vector<T>& rstd, std::size_t rows,
                        std::size_t C, bool accumulate_dx, bool accumulate_dw);

}  // namespace remat::ref
