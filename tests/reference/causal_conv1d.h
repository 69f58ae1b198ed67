// Plain reference for the causal depthwise conv1d + SiLU of Gated DeltaNet layers, forward and
// backward side by side, written for clarity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remat::ref {

// The layout of x, y [rows, T, C] and w [C, K]; positions [rows, T] (empty: every row is one
// example) gives each token's position in its example.
struct Conv1dLayout {
  std::size_t rows, T, C, K;
  std::vector<uint32_t> positions;
};

// y[r,t,c] = silu(sum_k w[c,k] x[r, t-(K-1)+k, c]) with taps before the token's example reading
// zero. Resizes y.
template <class T>
void causal_conv1d_forward(std::vector<T>& y, const std::vector<T>& x, const std::vector<T>& w,
                           const Conv1dLayout& l);

// dx, dw from dy; both sized already. With accumulate they are added to, otherwise
// overwritten.
template <class T>
void causal_conv1d_backward(std::vector<T>& dx, std::vector<T>& dw, const std::vector<T>& dy,
                            const std::vector<T>& x, const std::vector<T>& w, const Conv1dLayout& l,
                            bool accumulate_dx, bool accumulate_dw);

}  // namespace remat::ref
