// The gated delta rule in chunkwise (WY) form (Yang, Wang, Shen, Panda, Kim, "Parallelizing Linear
// Transformers with the Delta Rule over Sequence Length", 2024, section 3; Yang, Kautz,
// Hatamizadeh, "Gated Delta Networks", 2024, section 3.3), forward and backward, written for
// clarity. The sequential reference (gated_delta_rule.h) stays the mathematical truth; this one is
// the algorithm the GPU kernels (runtime/kernels/gated_delta_rule_wy.h) run block by block, but
// for their arithmetic: they solve with (I + A) by substitution rather than forming T, and take
// decays below e^-40 as zero.
//
// Per row and value head, the steps run in blocks of C tokens at fixed multiples of C from t = 0.
// Within a block (i, j its tokens, S0 the state before it, seg_i the examples started in the
// block up to i: positions[t] == 0 starts one):
//   G_i = sum of g over the tokens of i's example in the block up to i (0 at a restart: the
//         state it would decay is zero); Gamma_ij = exp(G_i - G_j), always as a difference.
//   z_i = 1 if i is in the example the block started in (seg_i == 0): only then does S0 reach i.
//   A_ij = beta_i Gamma_ij (k_i . k_j) for j < i in i's example, else 0;  T = (I + A)^-1.
//   R = diag(beta) V - diag(beta z e^G) K S0;  U = T R = Ut - W S0 with Ut = T diag(beta) V,
//       W = T diag(beta z e^G) K.
//   M_ij = Gamma_ij (q_i . k_j) for j <= i in i's example;  O = diag(z e^G) Q S0 + M U.
//   S_out = z_n e^{G_n} S0 + sum_{j in n's example} Gamma_nj k_j u_j^T, n the block's last token.
// Backward, from dO and dS_out:
//   dU = M^T dO + diag(Gamma_n.) K dS_out;  dS0 = z_n e^{G_n} dS_out + Q^T diag(z e^G) dO - W^T dU
//   dR = T^T dU;  dA = -dR U^T (masked as A);  dM = dO U^T (masked as M)
// and the chain rule through the masks, the products and Gamma to dq, dk, dv, dbeta and dG; dg_m
// is the reverse cumsum of dG over m's example within the block (0 at a restart).
#pragma once

#include <cstddef>
#include <vector>

#include "tests/reference/gated_delta_rule.h"

namespace remat::ref {

// The arithmetic the chunkwise form runs in: double to compare with the sequential reference's
// mathematics, float to show the form's own rounding stays at float32's.
enum class GdrArithmetic { f64, f32 };

// As gated_delta_rule_forward, in blocks of C tokens.
void chunked_gated_delta_rule_forward(const GdrShape& s, const GdrInputs& in, std::size_t C,
                                      GdrArithmetic arith, std::vector<double>& o,
                                      std::vector<double>& s_final);

// As gated_delta_rule_backward, in blocks of C tokens: block-start states from a forward pass,
// then the blocks last first.
void chunked_gated_delta_rule_backward(const GdrShape& s, const GdrInputs& in, std::size_t C,
                                       GdrArithmetic arith, const std::vector<double>& d_o,
                                       const std::vector<double>& ds_final, GdrGrads& grads);

}  // namespace remat::ref
