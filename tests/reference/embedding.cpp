#include "tests/reference/embedding.h"

#include <algorithm>

namespace remat::ref {

template <class T>
void embedding_forward(std::vector<T>& x, const std::vector<uint32_t>& tokens,
                       const std::vector<T>& wte, const std::vector<T>& wpe, std::size_t B,
                       std::size_t T_, std::size_t C) {
  x.assign(B * T_ * C, T(0));
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T_; ++t) {
      const std::size_t r = b * T_ + t;
      for (std::size_t c = 0; c < C; ++c) x[r * C + c] = wte[tokens[r] * C + c] + wpe[t * C + c];
    }
}

template <class T>
void embedding_forward_at(std::vector<T>& x, const std::vector<uint32_t>& tokens,
                          const std::vector<uint32_t>& positions, const std::vector<T>& wte,
                          const std::vector<T>& wpe, std::size_t C) {
  x.assign(tokens.size() * C, T(0));
  for (std::size_t r = 0; r < tokens.size(); ++r)
    for (std::size_t c = 0; c < C; ++c)
      x[r * C + c] = wte[tokens[r] * C + c] + wpe[positions[r] * C + c];
}

template <class T>
void token_embedding_forward(std::vector<T>& x, const std::vector<uint32_t>& tokens,
                             const std::vector<T>& wte, std::size_t C, T scale) {
  x.assign(tokens.size() * C, T(0));
  for (std::size_t r = 0; r < tokens.size(); ++r)
    for (std::size_t c = 0; c < C; ++c) x[r * C + c] = wte[tokens[r] * C + c] * scale;
}

template <class T>
void embedding_backward(std::vector<T>& dwte, std::vector<T>& dwpe,
                        const std::vector<uint32_t>& tokens, const std::vector<T>& dx,
                        std::size_t B, std::size_t T_, std::size_t C, bool accumulate_wte,
                        bool accumulate_wpe) {
  if (!accumulate_wte) std::fill(dwte.begin(), dwte.end(), T(0));
  if (!accumulate_wpe) std::fill(dwpe.begin(), dwpe.end(), T(0));
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T_; ++t) {
      const std::size_t r = b * T_ + t;
      for (std::size_t c = 0; c < C; ++c) {
        dwte[tokens[r] * C + c] += dx[r * C + c];
        dwpe[t * C + c] += dx[r * C + c];
      }
    }
}

#define REMAT_INSTANTIATE(T)                                                                    \
  template void embedding_forward<T>(std::vector<T>&, const std::vector<uint32_t>&,             \
                                     const std::vector<T>&, const std::vector<T>&, std::size_t, \
                                     std::size_t, std::size_t);                                 \
  template void embedding_forward_at<T>(std::vector<T>&, const std::vector<uint32_t>&,          \
                                        const std::vector<uint32_t>&, const std::vector<T>&,    \
                                        const std::vector<T>&, std::size_t);                    \
  template void token_embedding_forward<T>(std::vector<T>&, const std::vector<uint32_t>&,       \
                                           const std::vector<T>&, std::size_t, T);              \
  template void embedding_backward<T>(std::vector<T>&, std::vector<T>&,                         \
                                      const std::vector<uint32_t>&, const std::vector<T>&,      \
                                      std::size_t, std::size_t, std::size_t, bool, bool);
REMAT_INSTANTIATE(float)
REMAT_INSTANTIATE(double)
#undef REMAT_INSTANTIATE

}  // namespace remat::ref
