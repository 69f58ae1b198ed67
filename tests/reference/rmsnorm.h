// Plain reference for RMSNorm over the last axis (weight only, eps), forward and backward side
// by side, written for clarity.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

// y[rows,C] = x * rstd * (offset + w), rstd = 1/sqrt(mean(x^2) + eps); offset 1 is Gemma's
// norm. Resizes y and rstd.
template <class T>
void rmsnorm_forward(std::vector<T>& y, std::vector<T>& rstd, const std::vector<T>& x,
                     const std::vector<T>& w, std::size_t rows, std::size_t C, T eps,
                     T offset = T(0));

// dx, dw from dy. Gradients must be sized already; with accumulate they are added to, otherwise
// overwritten. dw accumulates from its old value over rows 0, 1, 2, ...
template <class T>
void rmsnorm_backward(std::vector<T>& dx, std::vector<T>& dw, const std::vector<T>& dy,
                      const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& rstd,
                      std::size_t rows, std::size_t C, bool accumulate_dx, bool accumulate_dw,
                      T offset = T(0));

}  // namespace remat::ref
