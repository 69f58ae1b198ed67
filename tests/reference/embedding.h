// Plain reference for the token + position embedding, forward and backward side by side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remat::ref {

// x[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]. Resizes x to B*T*C.
template <class T>
void embedding_forward(std::vector<T>& x, const std::vector<uint32_t>& tokens,
                       const std::vector<T>& wte, const std::vector<T>& wpe, std::size_t B,
                       std::size_t T_, std::size_t C);

// x[r,:] = wte[tokens[r],:] + wpe[positions[r],:]: each row's own position (packed rows, where a
// position restarts at 0 with each example). Resizes x to tokens.size()*C.
template <class T>
void embedding_forward_at(std::vector<T>& x, const std::vector<uint32_t>& tokens,
                          const std::vector<uint32_t>& positions, const std::vector<T>& wte,
                          const std::vector<T>& wpe, std::size_t C);

// x[r,:] = wte[tokens[r],:] · scale: the Llama family's token embedding (no position table),
// Gemma's scaled by sqrt(C). Resizes x to tokens.size()*C.
template <class T>
void token_embedding_forward(std::vector<T>& x, const std::vector<uint32_t>& tokens,
                             const std::vector<T>& wte, std::size_t C, T scale);

// dwte[V,C] and dwpe[ctx,C] (sized already) from dx[B*T,C]. Overwriting zeroes the whole
// tensor first; either way positions are added in order 0, 1, 2, ... of b*T + t.
template <class T>
void embedding_backward(std::vector<T>& dwte, std::vector<T>& dwpe,
                        const std::vector<uint32_t>& tokens, const std::vector<T>& dx,
                        std::size_t B, std::size_t T_, std::size_t C, bool accumulate_wte,
                        bool accumulate_wpe);

}  // namespace remat::ref
