// Plain reference for the gated delta rule (Gated DeltaNet's recurrence, Qwen3-Next / Qwen3.5
// linear attention), forward and backward side by side, written for clarity.
//
// Per row and value head h (key head h / (Hv / Hk): consecutive value heads share a key head, as
// transformers' repeat_interleave), the state S is [dk, dv] and for t = 0 .. T-1:
//   S = 0 where positions[t] == 0 (packed rows: a new example starts)
//   S = exp(g_t) S;  S += beta_t k_t (v_t - S^T k_t)^T;  o_t = S^T q_t
// q is taken as given: already L2-normalised and scaled by 1/sqrt(dk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace remat::ref {

struct GdrShape {
  std::size_t rows = 1, T = 1, Hk = 1, Hv = 1, dk = 1, dv = 1;
};

struct GdrInputs {
  std::vector<double> q, k;         // [rows, T, Hk, dk]
  std::vector<double> v;            // [rows, T, Hv, dv]
  std::vector<double> g, beta;      // [rows, T, Hv]: log decay, write strength
  std::vector<double> s0;           // [rows, Hv, dk, dv]; empty: zero
  std::vector<uint32_t> positions;  // [rows, T]; empty: one example per row
};

struct GdrGrads {
  std::vector<double> dq, dk, dv, dg, dbeta, ds0;
};

// o [rows, T, Hv, dv] and the final state [rows, Hv, dk, dv]. Resizes both.
void gated_delta_rule_forward(const GdrShape& s, const GdrInputs& in, std::vector<double>& o,
                              std::vector<double>& s_final);

// Every gradient from do (dL/do) and ds_final (dL/dS_T; empty: zero). Resizes all of them.
void gated_delta_rule_backward(const GdrShape& s, const GdrInputs& in,
                               const std::vector<double>& d_o, const std::vector<double>& ds_final,
                               GdrGrads& grads);

}  // namespace remat::ref
