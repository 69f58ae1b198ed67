// Plain reference for causal attention, written for clarity like llm.c's CPU code: multi-head on
// GPT-2's fused qkv, and grouped-query on separate q, k, v (the Llama family).
// Unlike the kernels it materialises each head's full T x T score matrix: that independence is
// what lets it check the flash-style kernels.
//
// Every function takes packed rows' `positions` [B,T] (base/row_positions.h): given, token t
// attends only to tokens t - positions[b T + t] .. t of its row (its own example), the block-
// diagonal causal mask; empty, to tokens 0 .. t. A sliding window w > 0 (transformers'
// sliding_window) narrows that to tokens t - w + 1 .. t as well; a score scale other than 0
// replaces 1/√hs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remat::ref {

// The sliding window (0: none) and score scale (0: 1/√hs) of the fused multi-head functions.
struct Masking {
  std::size_t window = 0;
  double scale = 0.0;
};

// qkv[B,T,3C] (q | k | v per position, head h in columns h*hs..(h+1)*hs of each, hs = C/NH)
// -> out[B,T,C], lse[B,NH,T]: out_t = Σ_{s≤t} softmax_s(scale q_t·k_s) v_s with scale 1/√hs,
// lse_t = log Σ_{s≤t} exp(scale q_t·k_s). Sums in double.
template <class T>
void attention_forward(std::vector<T>& out, std::vector<T>& lse, const std::vector<T>& qkv,
                       std::size_t B, std::size_t Tn, std::size_t C, std::size_t NH,
                       const std::vector<uint32_t>& positions = {}, const Masking& m = {});

// dout[B,T,C] -> dqkv[B,T,3C] (overwritten). Recomputes the probability matrix from qkv and
// backpropagates through softmax the textbook way, dpre_s = att_s (datt_s - Σ_u att_u datt_u).
template <class T>
void attention_backward(std::vector<T>& dqkv, const std::vector<T>& dout, const std::vector<T>& qkv,
                        std::size_t B, std::size_t Tn, std::size_t C, std::size_t NH,
                        const std::vector<uint32_t>& positions = {}, const Masking& m = {});

// Grouped-query attention: NH query heads of D floats, KV key/value heads (KV divides NH), query
// head h attending with key/value head h / (NH / KV) as Hugging Face's repeat_kv does; window
// and scale as Masking's.
struct GqaDims {
  std::size_t B, T, NH, KV, D;
  std::size_t window = 0;
  double scale = 0.0;
};

// q[B,T,NH*D], k and v [B,T,KV*D] -> out[B,T,NH*D], lse[B,NH,T], as attention_forward per
// query head with scale 1/√D (or n.scale).
template <class T>
void gqa_attention_forward(std::vector<T>& out, std::vector<T>& lse, const std::vector<T>& q,
                           const std::vector<T>& k, const std::vector<T>& v, const GqaDims& n,
                           const std::vector<uint32_t>& positions = {});

// dout[B,T,NH*D] -> dq[B,T,NH*D], dk and dv [B,T,KV*D] (overwritten): a key/value head's
// gradients sum those of every query head of its group.
template <class T>
void gqa_attention_backward(std::vector<T>& dq, std::vector<T>& dk, std::vector<T>& dv,
                            const std::vector<T>& dout, const std::vector<T>& q,
                            const std::vector<T>& k, const std::vector<T>& v, const GqaDims& n,
                            const std::vector<uint32_t>& positions = {});

}  // namespace remat::ref
