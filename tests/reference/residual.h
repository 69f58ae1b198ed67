// Plain reference for the residual connection, forward and backward side by side.
#pragma once

#include <vector>

namespace remat::ref {

// y = a + scale·b. Resizes y.
template <class T>
void residual_forward(std::vector<T>& y, const std::vector<T>& a, const std::vector<T>& b,
                      T scale = 1);
// da (=|+=) dy, db (=|+=) scale·dy; da and db must be sized already.
template <class T>
void residual_backward(std::vector<T>& da, std::vector<T>& db, const std::vector<T>& dy,
                       bool accumulate_a, bool accumulate_b, T scale = 1);

}  // namespace remat::ref
