// Plain reference for the per-head L2 normalisation of Gated DeltaNet's q and k, forward and
// backward side by side, written for clarity.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

// Head h of token t is x[t * stride + offset + h * D ...]; y is dense [tokens, heads, D].
struct L2normLayout {
  std::size_t tokens, heads, D, stride, offset;
  double eps, scale;
};

// y = x * scale / sqrt(sum x^2 + eps) per head. Resizes y.
template <class T>
void l2norm_forward(std::vector<T>& y, const std::vector<T>& x, const L2normLayout& l);

// dx (sized as x) from dy; only x's head places are written (added to with accumulate).
template <class T>
void l2norm_backward(std::vector<T>& dx, const std::vector<T>& dy, const std::vector<T>& x,
                     const L2normLayout& l, bool accumulate);

}  // namespace remat::ref
