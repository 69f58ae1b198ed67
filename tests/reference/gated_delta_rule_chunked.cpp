#include "tests/reference/gated_delta_rule_chunked.h"

#include <cmath>

namespace remat::ref {

namespace {

// One (row, value head)'s inputs in the arithmetic R: q, k [T, dk], v [T, dv], g, beta [T], the
// restarts [T] and S0 [dk, dv].
template <class R>
struct Head {
  std::size_t T = 0, dk = 0, dv = 0;
  std::vector<R> q, k, v, g, beta, s0;
  std::vector<bool> restart;
};

template <class R>
Head<R> gather(const GdrShape& s, const GdrInputs& in, std::size_t r, std::size_t h) {
  const std::size_t kh = h / (s.Hv / s.Hk);
  Head<R> hd;
  hd.T = s.T, hd.dk = s.dk, hd.dv = s.dv;
  for (std::size_t t = 0; t < s.T; ++t) {
    const std::size_t qk = ((r * s.T + t) * s.Hk + kh) * s.dk;
    const std::size_t vo = ((r * s.T + t) * s.Hv + h) * s.dv, gb = (r * s.T + t) * s.Hv + h;
    for (std::size_t i = 0; i < s.dk; ++i) hd.q.push_back(R(in.q[qk + i]));
    for (std::size_t i = 0; i < s.dk; ++i) hd.k.push_back(R(in.k[qk + i]));
    for (std::size_t c = 0; c < s.dv; ++c) hd.v.push_back(R(in.v[vo + c]));
    hd.g.push_back(R(in.g[gb]));
    hd.beta.push_back(R(in.beta[gb]));
    hd.restart.push_back(!in.positions.empty() && in.positions[r * s.T + t] == 0);
  }
  const std::size_t n = s.dk * s.dv, at = (r * s.Hv + h) * n;
  hd.s0.assign(n, R(0));
  if (!in.s0.empty())
    for (std::size_t x = 0; x < n; ++x) hd.s0[x] = R(in.s0[at + x]);
  return hd;
}

template <class R>
R dot(const R* a, const R* b, std::size_t n) {
  R acc = 0;
  for (std::size_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

// The state-independent part of one block of n tokens from t0: everything but the products with
// S0. Matrices are [n, n] row-major, zero outside their masks.
template <class R>
struct Block {
  std::size_t t0 = 0, n = 0;
  std::vector<std::size_t> seg;
  std::vector<R> G, ze;  // ze_i = z_i e^{G_i}
  std::vector<R> Gam, KK, QK, A, Tinv, M;
  std::vector<R> Ut, W;  // [n, dv], [n, dk]

  bool same(std::size_t i, std::size_t j) const { return seg[i] == seg[j]; }
};

template <class R>
Block<R> prepare(const Head<R>& hd, std::size_t t0, std::size_t n) {
  Block<R> b;
  b.t0 = t0, b.n = n;
  const std::size_t dk = hd.dk, dv = hd.dv;
  std::size_t seg = 0;
  R G = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (hd.restart[t0 + i])
      ++seg, G = 0;
    else
      G += hd.g[t0 + i];
    b.seg.push_back(seg);
    b.G.push_back(G);
    b.ze.push_back(seg == 0 ? std::exp(G) : R(0));
  }
  const R *q = &hd.q[t0 * dk], *k = &hd.k[t0 * dk];
  b.Gam.assign(n * n, R(0)), b.KK = b.QK = b.A = b.M = b.Gam;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      if (!b.same(i, j)) continue;
      const std::size_t x = i * n + j;
      b.Gam[x] = std::exp(b.G[i] - b.G[j]);
      b.KK[x] = dot(k + i * dk, k + j * dk, dk);
      b.QK[x] = dot(q + i * dk, k + j * dk, dk);
      if (j < i) b.A[x] = hd.beta[t0 + i] * b.Gam[x] * b.KK[x];
      b.M[x] = b.Gam[x] * b.QK[x];
    }
  // (I + A) T = I by forward substitution: T_ii = 1, T_ij = -sum_{j <= m < i} A_im T_mj.
  b.Tinv.assign(n * n, R(0));
  for (std::size_t i = 0; i < n; ++i) {
    b.Tinv[i * n + i] = 1;
    for (std::size_t j = 0; j < i; ++j) {
      R acc = 0;
      for (std::size_t m = j; m < i; ++m) acc += b.A[i * n + m] * b.Tinv[m * n + j];
      b.Tinv[i * n + j] = -acc;
    }
  }
  b.Ut.assign(n * dv, R(0)), b.W.assign(n * dk, R(0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t m = 0; m <= i; ++m) {
      const R t = b.Tinv[i * n + m], bm = hd.beta[t0 + m];
      for (std::size_t c = 0; c < dv; ++c) b.Ut[i * dv + c] += t * bm * hd.v[(t0 + m) * dv + c];
      for (std::size_t a = 0; a < dk; ++a) b.W[i * dk + a] += t * bm * b.ze[m] * k[m * dk + a];
    }
  return b;
}

// Gamma_{last, j}: how token j's write reaches the block's end (0 outside the last example).
template <class R>
R to_end(const Block<R>& b, std::size_t j) {
  return b.Gam[(b.n - 1) * b.n + j];
}

// U = Ut - W S0; o_i = ze_i S0^T q_i + sum_j M_ij u_j; S0 becomes S_out.
template <class R>
void block_forward(const Block<R>& b, const Head<R>& hd, std::vector<R>& S, std::vector<R>& U,
                   std::vector<R>* o) {
  const std::size_t n = b.n, dk = hd.dk, dv = hd.dv;
  const R* k = &hd.k[b.t0 * dk];
  U.assign(n * dv, R(0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < dv; ++c) {
      R ws = 0;
      for (std::size_t a = 0; a < dk; ++a) ws += b.W[i * dk + a] * S[a * dv + c];
      U[i * dv + c] = b.Ut[i * dv + c] - ws;
    }
  if (o)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t c = 0; c < dv; ++c) {
        R qs = 0, mu = 0;
        for (std::size_t a = 0; a < dk; ++a) qs += hd.q[(b.t0 + i) * dk + a] * S[a * dv + c];
        for (std::size_t j = 0; j <= i; ++j) mu += b.M[i * n + j] * U[j * dv + c];
        (*o)[(b.t0 + i) * dv + c] = b.ze[i] * qs + mu;
      }
  const R zl = b.ze[n - 1];
  for (std::size_t a = 0; a < dk; ++a)
    for (std::size_t c = 0; c < dv; ++c) {
      R ku = 0;
      for (std::size_t j = 0; j < n; ++j) ku += to_end(b, j) * k[j * dk + a] * U[j * dv + c];
      S[a * dv + c] = zl * S[a * dv + c] + ku;
    }
}

// One head's gradients in R: dq, dk [T, dk], dv [T, dv], dg, dbeta [T].
template <class R>
struct HeadGrads {
  std::vector<R> dq, dk, dv, dg, dbeta;
};

// The serial part of the block's backward: dU from dO and dS (dL/dS_out), and dS becomes dL/dS0.
template <class R>
std::vector<R> block_state_backward(const Block<R>& b, const Head<R>& hd, const std::vector<R>& dO,
                                    std::vector<R>& dS) {
  const std::size_t n = b.n, dk = hd.dk, dv = hd.dv;
  const R *q = &hd.q[b.t0 * dk], *k = &hd.k[b.t0 * dk];
  std::vector<R> dU(n * dv, R(0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < dv; ++c) {
      R md = 0, ks = 0;
      for (std::size_t m = i; m < n; ++m) md += b.M[m * n + i] * dO[(b.t0 + m) * dv + c];
      for (std::size_t a = 0; a < dk; ++a) ks += k[i * dk + a] * dS[a * dv + c];
      dU[i * dv + c] = md + to_end(b, i) * ks;
    }
  const R zl = b.ze[n - 1];
  for (std::size_t a = 0; a < dk; ++a)
    for (std::size_t c = 0; c < dv; ++c) {
      R qd = 0, wu = 0;
      for (std::size_t i = 0; i < n; ++i) {
        qd += b.ze[i] * q[i * dk + a] * dO[(b.t0 + i) * dv + c];
        wu += b.W[i * dk + a] * dU[i * dv + c];
      }
      dS[a * dv + c] = zl * dS[a * dv + c] + qd - wu;
    }
  return dU;
}

// The rest of the block's backward, given S0, U, dU and dS_out: every input's gradient.
template <class R>
void block_input_backward(const Block<R>& b, const Head<R>& hd, const std::vector<R>& S0,
                          const std::vector<R>& U, const std::vector<R>& dO,
                          const std::vector<R>& dU, const std::vector<R>& dSo, HeadGrads<R>& gr) {
  const std::size_t n = b.n, dk = hd.dk, dv = hd.dv, t0 = b.t0;
  const R *q = &hd.q[t0 * dk], *k = &hd.k[t0 * dk], *beta = &hd.beta[t0];
  R *dq = &gr.dq[t0 * dk], *dkk = &gr.dk[t0 * dk], *dbeta = &gr.dbeta[t0];
  std::vector<R> dG(n, R(0));
  // dR = T^T dU; dv = beta dR; and the S0 side of R: dKb = -S0 dR.
  std::vector<R> dR(n * dv, R(0));
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t c = 0; c < dv; ++c) {
      R acc = 0;
      for (std::size_t i = j; i < n; ++i) acc += b.Tinv[i * n + j] * dU[i * dv + c];
      dR[j * dv + c] = acc;
    }
  for (std::size_t i = 0; i < n; ++i) {
    const R* v = &hd.v[(t0 + i) * dv];
    for (std::size_t c = 0; c < dv; ++c) gr.dv[(t0 + i) * dv + c] = beta[i] * dR[i * dv + c];
    dbeta[i] += dot(&dR[i * dv], v, dv);
    // Kb_i = beta_i ze_i k_i and O's S0 term ze_i S0^T q_i.
    R skb = 0, qx = 0;
    for (std::size_t a = 0; a < dk; ++a) {
      const R dkb = -dot(&S0[a * dv], &dR[i * dv], dv),
              x = dot(&S0[a * dv], &dO[(t0 + i) * dv], dv);
      dkk[i * dk + a] += beta[i] * b.ze[i] * dkb;
      skb += dkb * k[i * dk + a];
      dq[i * dk + a] += b.ze[i] * x;
      qx += q[i * dk + a] * x;
    }
    dbeta[i] += b.ze[i] * skb;
    dG[i] += beta[i] * b.ze[i] * skb + b.ze[i] * qx;
  }
  // dA = -dR U^T and dM = dO U^T under their masks, through A = beta Gam KK and M = Gam QK.
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      if (!b.same(i, j)) continue;
      const std::size_t x = i * n + j;
      const R dM = dot(&dO[(t0 + i) * dv], &U[j * dv], dv);
      const R dA = j < i ? -dot(&dR[i * dv], &U[j * dv], dv) : R(0);
      dbeta[i] += dA * b.Gam[x] * b.KK[x];
      const R dKK = dA * beta[i] * b.Gam[x], dQK = dM * b.Gam[x];
      for (std::size_t a = 0; a < dk; ++a) {
        dkk[i * dk + a] += dKK * k[j * dk + a];
        dkk[j * dk + a] += dKK * k[i * dk + a] + dQK * q[i * dk + a];
        dq[i * dk + a] += dQK * k[j * dk + a];
      }
      // Gam_ii = 1 whatever G is.
      if (j < i) {
        const R dGam = (dA * beta[i] * b.KK[x] + dM * b.QK[x]) * b.Gam[x];
        dG[i] += dGam;
        dG[j] -= dGam;
      }
    }
  // S_out = ze_last S0 + sum_j Gam_{last, j} k_j u_j^T.
  const std::size_t last = n - 1;
  for (std::size_t j = 0; j < n; ++j) {
    const R D = to_end(b, j);
    if (D == R(0)) continue;
    R dD = 0;
    for (std::size_t a = 0; a < dk; ++a) {
      const R y = dot(&dSo[a * dv], &U[j * dv], dv);
      dkk[j * dk + a] += D * y;
      dD += k[j * dk + a] * y;
    }
    if (j < last) {
      dG[last] += dD * D;
      dG[j] -= dD * D;
    }
  }
  R sds = 0;
  for (std::size_t x = 0; x < dk * dv; ++x) sds += S0[x] * dSo[x];
  dG[last] += b.ze[last] * sds;
  // g_m enters every G_i of its example from m on; a restart's g decays a zero state.
  for (std::size_t m = 0; m < n; ++m) {
    R acc = 0;
    if (!hd.restart[t0 + m])
      for (std::size_t i = m; i < n && b.same(i, m); ++i) acc += dG[i];
    gr.dg[t0 + m] = acc;
  }
}

template <class R>
std::vector<Block<R>> blocks_of(const Head<R>& hd, std::size_t C) {
  std::vector<Block<R>> bs;
  for (std::size_t t0 = 0; t0 < hd.T; t0 += C)
    bs.push_back(prepare(hd, t0, std::min(C, hd.T - t0)));
  return bs;
}

template <class R>
void forward(const GdrShape& s, const GdrInputs& in, std::size_t C, std::vector<double>& o,
             std::vector<double>& s_final) {
  o.assign(s.rows * s.T * s.Hv * s.dv, 0.0);
  s_final.assign(s.rows * s.Hv * s.dk * s.dv, 0.0);
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t h = 0; h < s.Hv; ++h) {
      const Head<R> hd = gather<R>(s, in, r, h);
      std::vector<R> S = hd.s0, U, oh(s.T * s.dv);
      for (const Block<R>& b : blocks_of(hd, C)) block_forward(b, hd, S, U, &oh);
      for (std::size_t t = 0; t < s.T; ++t)
        for (std::size_t c = 0; c < s.dv; ++c)
          o[((r * s.T + t) * s.Hv + h) * s.dv + c] = double(oh[t * s.dv + c]);
      for (std::size_t x = 0; x < S.size(); ++x) s_final[(r * s.Hv + h) * S.size() + x] = S[x];
    }
}

template <class R>
void backward(const GdrShape& s, const GdrInputs& in, std::size_t C, const std::vector<double>& d_o,
              const std::vector<double>& ds_final, GdrGrads& gr) {
  gr.dq.assign(in.q.size(), 0.0);
  gr.dk.assign(in.k.size(), 0.0);
  gr.dv.assign(in.v.size(), 0.0);
  gr.dg.assign(in.g.size(), 0.0);
  gr.dbeta.assign(in.beta.size(), 0.0);
  gr.ds0.assign(s.rows * s.Hv * s.dk * s.dv, 0.0);
  const std::size_t n = s.dk * s.dv;
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t h = 0; h < s.Hv; ++h) {
      const Head<R> hd = gather<R>(s, in, r, h);
      const std::size_t kh = h / (s.Hv / s.Hk), head = (r * s.Hv + h) * n;
      std::vector<R> dO(s.T * s.dv);
      for (std::size_t t = 0; t < s.T; ++t)
        for (std::size_t c = 0; c < s.dv; ++c)
          dO[t * s.dv + c] = R(d_o[((r * s.T + t) * s.Hv + h) * s.dv + c]);
      const std::vector<Block<R>> bs = blocks_of(hd, C);
      // Block-start states and each block's U, from the forward's arithmetic.
      std::vector<std::vector<R>> starts, Us(bs.size());
      std::vector<R> S = hd.s0;
      for (std::size_t x = 0; x < bs.size(); ++x) {
        starts.push_back(S);
        block_forward(bs[x], hd, S, Us[x], static_cast<std::vector<R>*>(nullptr));
      }
      HeadGrads<R> hg{std::vector<R>(s.T * s.dk), std::vector<R>(s.T * s.dk),
                      std::vector<R>(s.T * s.dv), std::vector<R>(s.T), std::vector<R>(s.T)};
      std::vector<R> dS(n, R(0));
      if (!ds_final.empty())
        for (std::size_t x = 0; x < n; ++x) dS[x] = R(ds_final[head + x]);
      for (std::size_t x = bs.size(); x-- > 0;) {
        const std::vector<R> dSo = dS;
        const std::vector<R> dU = block_state_backward(bs[x], hd, dO, dS);
        block_input_backward(bs[x], hd, starts[x], Us[x], dO, dU, dSo, hg);
      }
      for (std::size_t t = 0; t < s.T; ++t) {
        const std::size_t qk = ((r * s.T + t) * s.Hk + kh) * s.dk, gb = (r * s.T + t) * s.Hv + h;
        for (std::size_t i = 0; i < s.dk; ++i) {
          gr.dq[qk + i] += hg.dq[t * s.dk + i];
          gr.dk[qk + i] += hg.dk[t * s.dk + i];
        }
        for (std::size_t c = 0; c < s.dv; ++c)
          gr.dv[((r * s.T + t) * s.Hv + h) * s.dv + c] = hg.dv[t * s.dv + c];
        gr.dg[gb] = hg.dg[t];
        gr.dbeta[gb] = hg.dbeta[t];
      }
      for (std::size_t x = 0; x < n; ++x) gr.ds0[head + x] = dS[x];
    }
}

}  // namespace

void chunked_gated_delta_rule_forward(const GdrShape& s, const GdrInputs& in, std::size_t C,
                                      GdrArithmetic arith, std::vector<double>& o,
                                      std::vector<double>& s_final) {
  if (arith == GdrArithmetic::f64)
    forward<double>(s, in, C, o, s_final);
  else
    forward<float>(s, in, C, o, s_final);
}

void chunked_gated_delta_rule_backward(const GdrShape& s, const GdrInputs& in, std::size_t C,
                                       GdrArithmetic arith, const std::vector<double>& d_o,
                                       const std::vector<double>& ds_final, GdrGrads& grads) {
  if (arith == GdrArithmetic::f64)
    backward<double>(s, in, C, d_o, ds_final, grads);
  else
    backward<float>(s, in, C, d_o, ds_final, grads);
}

}  // namespace remat::ref
