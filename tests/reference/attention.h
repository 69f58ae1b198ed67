// Plain reference for causal multi-head attention, written for clarity like llm.c's CPU code.
// Unlike the kernels it materialises each head's full T x T score matrix: that independence is
// what lets it check the flash-style kernels.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

// qkv[B,T,3C] (q | k | v per position, head h in columns h*hs..(h+1)*hs of each, hs = C/NH)
// -> out[B,T,C], lse[B,NH,T]: out_t = Σ_{s≤t} softmax_s(scale q_t·k_s) v_s with scale 1/√hs,
// lse_t = log Σ_{s≤t} exp(scale q_t·k_s). Sums in double.
template <class T>
void attention_forward(std::vector<T>& out, std::vector<T>& lse, const std::vector<T>& qkv,
                       std::size_t B, std::size_t Tn, std::size_t C, std::size_t NH);

// dout[B,T,C] -> dqkv[B,T,3C] (overwritten). Recomputes the probability matrix from qkv and
// backpropagates through softmax the textbook way, dpre_s = att_s (datt_s - Σ_u att_u datt_u).
template <class T>
void attention_backward(std::vector<T>& dqkv, const std::vector<T>& dout, const std::vector<T>& qkv,
                        std::size_t B, std::size_t Tn, std::size_t C, std::size_t NH);

}  // namespace remat::ref
