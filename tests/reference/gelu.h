// Plain reference for GPT-2's GELU (tanh approximation), forward and backward side by side.
#pragma once

#include <vector>

namespace remat::ref {

// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Resizes y.
template <class T>
void gelu_forward(std::vector<T>& y, const std::vector<T>& x);
// dx (=|+=) dy * gelu'(x); dx must be sized already.
template <class T>
void gelu_backward(std::vector<T>& dx, const std::vector<T>& dy, const std::vector<T>& x,
                   bool accumulate);

}  // namespace remat::ref
