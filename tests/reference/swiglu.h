// Plain reference for SwiGLU, h = silu(g) * u, forward and backward side by side, and for
// Gemma's GeGLU (gelu_gate), h = gelu(g) * u with GPT-2's tanh GELU.
#pragma once

#include <vector>

namespace remat::ref {

// h = g * sigmoid(g) * u. Resizes h.
template <class T>
void swiglu_forward(std::vector<T>& h, const std::vector<T>& g, const std::vector<T>& u,
                    bool gelu_gate = false);

// dg (=|+=) dh * u * silu'(g), du (=|+=) dh * silu(g); dg and du must be sized already.
template <class T>
void swiglu_backward(std::vector<T>& dg, std::vector<T>& du, const std::vector<T>& dh,
                     const std::vector<T>& g, const std::vector<T>& u, bool accumulate_dg,
                     bool accumulate_du, bool gelu_gate = false);

}  // namespace remat::ref
