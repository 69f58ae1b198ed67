// Plain reference for matmul (a Linear layer with bias), written for clarity: out = inp·W + b.
#pragma once

#include <cstddef>
#include <vector>

namespace remat::ref {

enum class WeightLayout { in_out, out_in };  // [K,N] (HF Conv1D) or [N,K] (nn.Linear, tied head)

// out[M,N] = inp[M,K] · W + bias[N]; bias may be empty. Accumulates in double.
template <class T>
void matmul_forward(std::vector<T>& out, const std::vector<T>& inp, const std::vector<T>& w,
                    const std::vector<T>& bias, std::size_t M, std::size_t N, std::size_t K,
                    WeightLayout layout);

}  // namespace remat::ref
