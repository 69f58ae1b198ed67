// Plain reference for the backward of matmul (out = inp·W + bias, tests/reference/matmul.h),
// written for clarity. Gradients overwrite their outputs; accumulation is tested on the GPU.
#pragma once

#include <cstddef>
#include <vector>

#include "tests/reference/matmul.h"

namespace remat::ref {

// Given dout[M,N]:
//   dinp[M,K] = dout · Wᵀ          dinp[m,k] = Σ_n dout[m,n] W(k,n)
//   dw        = inpᵀ · dout        dW(k,n)   = Σ_m inp[m,k] dout[m,n], stored in `layout`
//   dbias[N]  = Σ_m dout[m,:]
// where W(k,n) is w[k*N+n] for in_out and w[n*K+k] for out_in. Sums in double.
template <class T>
void matmul_backward(std::vector<T>& dinp, std::vector<T>& dw, std::vector<T>& dbias,
                     const std::vector<T>& dout, const std::vector<T>& inp, const std::vector<T>& w,
                     std::size_t M, std::size_t N, std::size_t K, WeightLayout layout);

}  // namespace remat::ref
