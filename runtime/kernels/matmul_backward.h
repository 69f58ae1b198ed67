// Dispatches for the backward of matmul (out = inp·W + bias): dinp, dW and dbias are separate
// kernels so a schedule can skip the ones it does not need (no dinp for the first layer, no
// dbias for the bias-free LM head); on CPU drivers dbias rides in dW's texel dispatch.
#pragma once

#include <vector>

#include "runtime/kernels/grad_write.h"
#include "runtime/kernels/matmul.h"
#include "runtime/vulkan/device_plan.h"
#include "runtime/vulkan/executor.h"

namespace remat::kernels {

// dinp[M,K] (+)= dout[M,N] · Wᵀ, with W in `s.layout`.
Dispatch matmul_backward_input(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                               BufferSlice w, BufferSlice dinp, GradWrite mode);

// dW (+)= inpᵀ · dout, written in `s.layout` ([K,N] for in_out, [N,K] for out_in).
Dispatch matmul_backward_weight(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                                BufferSlice inp, BufferSlice dw, GradWrite mode);

// The two above with W and dW bound in weight_pieces (matmul.h), for an (out, in) weight larger
// than one binding (GPT-2's tied head): one dispatch per piece, exactly the single dispatch above
// when W fits. dW's pieces are disjoint rows, each computed as unsplit (same bits). dinp sums
// over n: the first piece overwrites or adds as `mode` says, later pieces continue that sum in
// the unsplit order, so an overwritten dinp has the unsplit bits; an accumulated one is
// old + (partial sums in order), which differs from old + (whole sum) only by rounding.
std::vector<Dispatch> matmul_backward_input_pieces(const DeviceQuirks& quirks, const MatmulShape& s,
                                                   BufferSlice dout, BufferSlice w,
                                                   BufferSlice dinp, GradWrite mode);
std::vector<Dispatch> matmul_backward_weight_pieces(const DeviceQuirks& quirks,
                                                    const MatmulShape& s, BufferSlice dout,
                                                    BufferSlice inp, BufferSlice dw,
                                                    GradWrite mode);

// dW and dbias as matmul_backward_weight_pieces and matmul_backward_bias compute them: one
// dispatch where quirks.bias_grad_in_weight_grad holds and the texel kernel can sum dbias beside
// dW (matmul_texels.h), else those two; the same bits either way.
std::vector<Dispatch> matmul_backward_weight_bias_pieces(const DeviceQuirks& quirks,
                                                         const MatmulShape& s, BufferSlice dout,
                                                         BufferSlice inp, BufferSlice dw,
                                                         GradWrite mode, BufferSlice dbias,
                                                         GradWrite bias_mode);

// dbias[N] (+)= Σ_m dout[m, :] (whole rows of dout: s.ld and s.n_offset unset).
Dispatch matmul_backward_bias(const DeviceQuirks& quirks, const MatmulShape& s, BufferSlice dout,
                              BufferSlice dbias, GradWrite mode);

}  // namespace remat::kernels
