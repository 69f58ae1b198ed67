// Dispatches for the backward of matmul (out = inp·W + bias): dinp, dW and dbias are separate
// kernels so a schedule can skip the ones it does not need (no dinp for the first layer, no
// dbias for the bias-free LM head).
#pragma once

#include "runtime/device_plan.h"
#include "runtime/executor.h"
#include "runtime/kernels/grad_write.h"
#include "runtime/kernels/matmul.h"

namespace remat::kernels {

// dinp[M,K] (+)= dout[M,N] · Wᵀ, with W in `s.layout`.
Dispatch matmul_backward_input(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                               BufferSlice w, BufferSlice dinp, GradWrite mode);

// dW (+)= inpᵀ · dout, written in `s.layout` ([K,N] for in_out, [N,K] for out_in).
Dispatch matmul_backward_weight(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                                BufferSlice inp, BufferSlice dw, GradWrite mode);

// dbias[N] (+)= Σ_m dout[m, :].
Dispatch matmul_backward_bias(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                              BufferSlice dbias, GradWrite mode);

}  // namespace remat::kernels
