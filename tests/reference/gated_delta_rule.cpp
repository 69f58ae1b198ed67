#include "tests/reference/gated_delta_rule.h"

#include <cmath>

namespace remat::ref {

namespace {

// Offsets of one (row, time, head) vector in the [rows, T, H, d] layouts.
std::size_t at(const GdrShape& s, std::size_t r, std::size_t t, std::size_t H, std::size_t h,
               std::size_t d) {
  return ((r * s.T + t) * H + h) * d;
}

bool resets(const GdrShape& s, const GdrInputs& in, std::size_t r, std::size_t t) {
  return !in.positions.empty() && in.positions[r * s.T + t] == 0;
}

// The states of one (row, value head), each [dk, dv]: before[t] is S before step t (after any
// reset), after[t] S after it.
struct States {
  std::vector<std::vector<double>> before, after;
};

States run_states(const GdrShape& s, const GdrInputs& in, std::size_t r, std::size_t h) {
  const std::size_t kh = h / (s.Hv / s.Hk), n = s.dk * s.dv;
  std::vector<double> S(n, 0.0);
  if (!in.s0.empty())
    S.assign(in.s0.begin() + (r * s.Hv + h) * n, in.s0.begin() + (r * s.Hv + h + 1) * n);
  States states;
  for (std::size_t t = 0; t < s.T; ++t) {
    if (resets(s, in, r, t)) S.assign(n, 0.0);
    states.before.push_back(S);
    const double* k = &in.k[at(s, r, t, s.Hk, kh, s.dk)];
    const double* v = &in.v[at(s, r, t, s.Hv, h, s.dv)];
    const double a = std::exp(in.g[(r * s.T + t) * s.Hv + h]),
                 b = in.beta[(r * s.T + t) * s.Hv + h];
    for (double& x : S) x *= a;
    for (std::size_t j = 0; j < s.dv; ++j) {
      double kv = 0;
      for (std::size_t i = 0; i < s.dk; ++i) kv += k[i] * S[i * s.dv + j];
      const double delta = b * (v[j] - kv);
      for (std::size_t i = 0; i < s.dk; ++i) S[i * s.dv + j] += k[i] * delta;
    }
    states.after.push_back(S);
  }
  return states;
}

}  // namespace

void gated_delta_rule_forward(const GdrShape& s, const GdrInputs& in, std::vector<double>& o,
                              std::vector<double>& s_final) {
  o.assign(s.rows * s.T * s.Hv * s.dv, 0.0);
  s_final.assign(s.rows * s.Hv * s.dk * s.dv, 0.0);
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t h = 0; h < s.Hv; ++h) {
      const auto states = run_states(s, in, r, h);
      const std::size_t kh = h / (s.Hv / s.Hk);
      for (std::size_t t = 0; t < s.T; ++t) {
        const std::vector<double>& S = states.after[t];
        const double* q = &in.q[at(s, r, t, s.Hk, kh, s.dk)];
        for (std::size_t j = 0; j < s.dv; ++j) {
          double acc = 0;
          for (std::size_t i = 0; i < s.dk; ++i) acc += q[i] * S[i * s.dv + j];
          o[at(s, r, t, s.Hv, h, s.dv) + j] = acc;
        }
      }
      const std::vector<double>& last = states.after[s.T - 1];
      std::copy(last.begin(), last.end(), s_final.begin() + (r * s.Hv + h) * s.dk * s.dv);
    }
}

// Step t, with U = exp(g) S_prev, kv = U^T k, delta = beta (v - kv), S = U + k delta^T and
// o = S^T q, backwards from dS (dL/dS_t, already holding everything after t):
//   dS += q do^T;  dq = S do;  ddelta = dS^T k;  dv = beta ddelta;  dbeta = ddelta . (v - kv);
//   dkv = -beta ddelta;  dk = dS delta + U dkv;  dU = dS + k dkv^T;  dg = <dU, U>;
//   dS_prev = exp(g) dU (0 where the state was reset before step t).
void gated_delta_rule_backward(const GdrShape& s, const GdrInputs& in,
                               const std::vector<double>& d_o, const std::vector<double>& ds_final,
                               GdrGrads& gr) {
  gr.dq.assign(in.q.size(), 0.0);
  gr.dk.assign(in.k.size(), 0.0);
  gr.dv.assign(in.v.size(), 0.0);
  gr.dg.assign(in.g.size(), 0.0);
  gr.dbeta.assign(in.beta.size(), 0.0);
  gr.ds0.assign(s.rows * s.Hv * s.dk * s.dv, 0.0);
  const std::size_t n = s.dk * s.dv;
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t h = 0; h < s.Hv; ++h) {
      const auto states = run_states(s, in, r, h);
      const std::size_t kh = h / (s.Hv / s.Hk), head = (r * s.Hv + h) * n;
      std::vector<double> dS(n, 0.0);
      if (!ds_final.empty()) dS.assign(ds_final.begin() + head, ds_final.begin() + head + n);
      for (std::size_t t = s.T; t-- > 0;) {
        const std::size_t qk = at(s, r, t, s.Hk, kh, s.dk), vo = at(s, r, t, s.Hv, h, s.dv);
        const std::size_t gb = (r * s.T + t) * s.Hv + h;
        const double *q = &in.q[qk], *k = &in.k[qk], *v = &in.v[vo], *dout = &d_o[vo];
        const double a = std::exp(in.g[gb]), b = in.beta[gb];
        const std::vector<double>& prev = states.before[t];
        const std::vector<double>& S = states.after[t];
        for (std::size_t j = 0; j < s.dv; ++j) {
          double kv = 0;
          for (std::size_t i = 0; i < s.dk; ++i) kv += k[i] * a * prev[i * s.dv + j];
          const double delta = b * (v[j] - kv);
          double ddelta = 0;
          for (std::size_t i = 0; i < s.dk; ++i) {
            double& ds = dS[i * s.dv + j];
            ds += q[i] * dout[j];
            gr.dq[qk + i] += S[i * s.dv + j] * dout[j];
            ddelta += k[i] * ds;
          }
          gr.dv[vo + j] = b * ddelta;
          gr.dbeta[gb] += ddelta * (v[j] - kv);
          const double dkv = -b * ddelta;
          for (std::size_t i = 0; i < s.dk; ++i) {
            double& ds = dS[i * s.dv + j];
            const double u = a * prev[i * s.dv + j];
            gr.dk[qk + i] += ds * delta + u * dkv;
            const double du = ds + k[i] * dkv;
            gr.dg[gb] += du * u;
            ds = a * du;
          }
        }
        if (resets(s, in, r, t)) dS.assign(n, 0.0);
      }
      std::copy(dS.begin(), dS.end(), gr.ds0.begin() + head);
    }
}

}  // namespace remat::ref
